"""Client machinery for the controller, in asyncio: what client-go gives Go.

* :mod:`.kubeapi` - rate-limited dict-based REST client over kubernetes_asyncio.
* :mod:`.reflector`, :mod:`.informer` - list+watch caches and shared informers.
* :mod:`.store`, :mod:`.selectors` - indexer, listers, label selectors.
* :mod:`.workqueue`, :mod:`.ratelimit` - work queues and retry rate limiting.
* :mod:`.events`, :mod:`.event_correlator` - the Event recorder.
* :mod:`.leaderelection` - Lease-based leader election; :mod:`.fence` - no
  write but the Lease's once leadership is not fresh.
* :mod:`.kubeconfig`, :mod:`.credentials` - where the configuration comes from;
  tokens refreshed before they expire and reloaded after a 401.
* :mod:`.clock` - injectable clocks (real and fake).

Everything is single-event-loop code: no threads, no locks.
"""

from mpi_operator.client.clock import Clock, FakeClock, RealClock
from mpi_operator.client.events import NORMAL, WARNING, EventRecorder, EventSink, KubeEventSink
from mpi_operator.client.fence import LeadershipFence
from mpi_operator.client.informer import (
    EventHandler,
    SharedInformer,
    strip_managed_fields,
)
from mpi_operator.client.informer_factory import SharedInformerFactory
from mpi_operator.client.kubeapi import (
    CONFIGMAPS,
    EVENTS,
    JOBS,
    LEASES,
    MPIJOBS,
    PODS,
    SECRETS,
    SERVICES,
    ApiError,
    KubeClient,
    Resource,
    is_already_exists,
    is_conflict,
    is_gone,
    is_not_found,
)
from mpi_operator.client.kubeconfig import ClientConfig, KubeconfigError, load_client_config
from mpi_operator.client.leaderelection import (
    HealthzAdaptor,
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
    default_identity,
)
from mpi_operator.client.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    TokenBucket,
    default_controller_rate_limiter,
)
from mpi_operator.client.selectors import (
    EVERYTHING,
    NOTHING,
    Selector,
    parse_selector,
    selector_from_label_selector,
    selector_from_set,
)
from mpi_operator.client.store import (
    DeletedFinalStateUnknown,
    Indexer,
    Lister,
    controller_of,
    is_controlled_by,
    meta_namespace_key,
    split_key,
)
from mpi_operator.client.workqueue import DelayingQueue, RateLimitingQueue, WorkQueue

__all__ = [
    "CONFIGMAPS",
    "EVENTS",
    "EVERYTHING",
    "JOBS",
    "LEASES",
    "MPIJOBS",
    "NORMAL",
    "NOTHING",
    "PODS",
    "SECRETS",
    "SERVICES",
    "WARNING",
    "ApiError",
    "BucketRateLimiter",
    "ClientConfig",
    "Clock",
    "DelayingQueue",
    "DeletedFinalStateUnknown",
    "EventHandler",
    "EventRecorder",
    "EventSink",
    "FakeClock",
    "HealthzAdaptor",
    "Indexer",
    "ItemExponentialFailureRateLimiter",
    "KubeClient",
    "KubeEventSink",
    "KubeconfigError",
    "LeaderCallbacks",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeadershipFence",
    "Lister",
    "MaxOfRateLimiter",
    "RateLimiter",
    "RateLimitingQueue",
    "RealClock",
    "Resource",
    "Selector",
    "SharedInformer",
    "SharedInformerFactory",
    "TokenBucket",
    "WorkQueue",
    "controller_of",
    "default_controller_rate_limiter",
    "default_identity",
    "is_already_exists",
    "is_conflict",
    "is_controlled_by",
    "is_gone",
    "is_not_found",
    "load_client_config",
    "meta_namespace_key",
    "parse_selector",
    "selector_from_label_selector",
    "selector_from_set",
    "split_key",
    "strip_managed_fields",
]
