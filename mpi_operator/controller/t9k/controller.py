"""The T9k MPIJob controller: its own informers, queue and workers.

The same machinery as the Kubeflow controller
(:class:`~mpi_operator.controller.queue_controller.QueueController`). Its child caches
select on ``batch.tensorstack.dev/operator-name=mpi-operator`` and its queue
is named ``t9k-mpijob``, so it shares nothing with the Kubeflow controller but
the API client (and the recorder, when one is passed in).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Unpack

from mpi_operator.api.scheduling import GangKind
from mpi_operator.api.t9k import API_VERSION, KIND
from mpi_operator.client import (
    CONFIGMAPS,
    PODS,
    SECRETS,
    SERVICES,
    ApiError,
    KubeClient,
    SharedInformer,
    is_not_found,
)
from mpi_operator.client.kubeapi import POD_GROUPS_WORKLOAD_API
from mpi_operator.controller.core.crds import GANG_SCHEDULING_FLAG
from mpi_operator.controller.core.objects import slim_pod
from mpi_operator.controller.core.on_demand import OnDemandCache
from mpi_operator.controller.handlers import ChildHandlers
from mpi_operator.controller.options import ControllerOptions
from mpi_operator.controller.queue_controller import (
    JobInformers,
    QueueController,
    Wiring,
)
from mpi_operator.controller.runner import SyncRunner
from mpi_operator.controller.t9k.children import POD_GROUP_NEEDED_FOR
from mpi_operator.controller.t9k.context import (
    T9K_MPIJOBS,
    T9K_OPERATOR_SELECTOR,
    T9K_POD_GROUPS,
    Listers,
    SyncContext,
    T9kOptions,
    job_reference,
)
from mpi_operator.controller.t9k.metrics import T9kMetrics
from mpi_operator.controller.t9k.sync import T9kMPIJobSyncer

QUEUE_NAME = "t9k-mpijob"

__all__ = ["QUEUE_NAME", "T9kMPIJobController", "T9kOptions", "crd_installed"]


async def crd_installed(client: KubeClient) -> bool:
    """Whether the API server serves ``mpijobs.batch.tensorstack.dev/v1beta1``.

    The T9k controller's informers never sync without it, so the process
    starts the controller only when this is true (unless switched off).
    """
    path = f"/apis/{T9K_MPIJOBS.group}/{T9K_MPIJOBS.version}"
    try:
        found = await client.request("GET", path)
    except ApiError as err:
        if is_not_found(err):
            return False
        raise
    resources = (found or {}).get("resources") or []
    return any(r.get("name") == T9K_MPIJOBS.plural for r in resources)


@dataclass(slots=True)
class T9kInformers(JobInformers):
    services: SharedInformer
    configmaps: SharedInformer
    secrets: SharedInformer
    pod_groups: SharedInformer
    """Not the factory's: started by the first sync that needs it (an optional CRD)."""
    gang_pod_groups: SharedInformer | None = None
    """The Workload API's PodGroups, with ``--gang-scheduling=workload-api`` only; not the
    factory's either: a cluster may lack the API (its feature gates are alpha)."""


class T9kMPIJobController(QueueController):
    informers: T9kInformers
    started_event = "t9k controller started"

    def __init__(
        self,
        client: KubeClient,
        options: ControllerOptions,
        *,
        t9k_options: T9kOptions | None = None,
        **wiring: Unpack[Wiring],
    ) -> None:
        """Of ``options.gang`` only the Workload API applies, to the jobs that do not name
        the t9k scheduler (volcano and scheduler-plugins do not: a T9k job chooses its
        scheduler itself)."""
        super().__init__(QUEUE_NAME, client, options, reference=job_reference, **wiring)
        workload_api = options.gang is not None and options.gang.kind is GangKind.WORKLOAD_API
        self.metrics = T9kMetrics.create(self.registry)
        self.informers = self._informers(client, options, workload_api)
        i = self.informers
        self.syncer = T9kMPIJobSyncer(
            SyncContext(
                client=client,
                listers=Listers(
                    mpijobs=i.mpijobs.lister,
                    pods=i.pods.lister,
                    services=i.services.lister,
                    configmaps=i.configmaps.lister,
                    secrets=i.secrets.lister,
                    pod_groups=OnDemandCache(i.pod_groups, POD_GROUP_NEEDED_FOR),
                    gang_pod_groups=(
                        OnDemandCache(i.gang_pod_groups, GANG_SCHEDULING_FLAG)
                        if i.gang_pod_groups
                        else None
                    ),
                ),
                recorder=self.recorder,
                clock=self.clock,
                options=replace(t9k_options or T9kOptions(), workload_api=workload_api),
                state=self.state,
                requeue=self.continue_later,
                continuing=self.queue.continuing,
                requeue_after=self.queue.add_after,
            )
        )
        self.runner = SyncRunner(
            QUEUE_NAME,
            self.queue,
            self.scoped_sync(self.syncer.sync),
            self.metrics.reconcile_duration,
            self.state.failures,
            threadiness=options.threadiness,
        )
        self.connect_handlers(
            ChildHandlers(API_VERSION, KIND, i.mpijobs.lister, self.enqueue_batched)
        )

    def _informers(
        self, client: KubeClient, options: ControllerOptions, workload_api: bool
    ) -> T9kInformers:
        f = self.factory
        return T9kInformers(
            mpijobs=f.informer_for(T9K_MPIJOBS),
            pods=f.informer_for(PODS, label_selector=T9K_OPERATOR_SELECTOR, transform=slim_pod),
            services=f.informer_for(SERVICES, label_selector=T9K_OPERATOR_SELECTOR),
            configmaps=f.informer_for(CONFIGMAPS, label_selector=T9K_OPERATOR_SELECTOR),
            secrets=f.informer_for(SECRETS, label_selector=T9K_OPERATOR_SELECTOR),
            # Not the factory's: started by the first sync that needs it (an optional CRD).
            pod_groups=f.on_demand(
                SharedInformer(
                    client,
                    T9K_POD_GROUPS,
                    namespace=options.namespace,
                    label_selector=T9K_OPERATOR_SELECTOR,
                    clock=self.clock,
                )
            ),
            # Not filtered by label, as the Kubeflow controller's: a PodGroup of the job's
            # name that is not its own is seen, and named in the error, without a read.
            # Started on demand as well (see the Kubeflow controller's PodGroups).
            gang_pod_groups=f.on_demand(
                SharedInformer(
                    client, POD_GROUPS_WORKLOAD_API, namespace=options.namespace, clock=self.clock
                )
            )
            if workload_api
            else None,
        )
