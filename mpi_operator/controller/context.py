"""What a sync needs: the API client, the informer caches, the recorder, the clock.

Everything reaches the sync code through one :class:`SyncContext`, which the
controller builds from its informers and tests build from seeded caches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mpi_operator.api.v2beta1 import (
    API_VERSION,
    JOB_NAME_LABEL,
    KIND,
    OPERATOR_NAME,
    OPERATOR_NAME_LABEL,
    RESTART_ATTEMPT_LABEL,
    MPIJob,
)
from mpi_operator.builders.secret import SSHKeyPair, generate_ssh_key_pair
from mpi_operator.client import Clock, EventRecorder, KubeClient, Lister
from mpi_operator.controller.expectations import CreationExpectations
from mpi_operator.controller.metrics import ControllerMetrics
from mpi_operator.controller.options import ControllerOptions
from mpi_operator.controller.progress import ProgressWrites

Obj = dict[str, Any]

ERR_RESOURCE_EXISTS = "ErrResourceExists"
MESSAGE_RESOURCE_EXISTS = (
    'Resource "{name}" of Kind "{kind}" already exists and is not managed by MPIJob'
)
OPERATOR_SELECTOR = f"{OPERATOR_NAME_LABEL}={OPERATOR_NAME}"


class SyncError(Exception):
    """The sync could not finish; the key is retried with backoff."""


@dataclass(slots=True)
class Listers:
    mpijobs: Lister
    pods: Lister
    jobs: Lister
    services: Lister
    configmaps: Lister
    secrets: Lister
    pod_groups: Lister | None = None
    priority_classes: Lister | None = None


@dataclass(slots=True)
class SyncContext:
    client: KubeClient
    listers: Listers
    recorder: EventRecorder
    clock: Clock
    options: ControllerOptions
    metrics: ControllerMetrics
    keygen: Callable[[], SSHKeyPair] = field(default=generate_ssh_key_pair)
    expectations: CreationExpectations | None = None
    requeue: Callable[[str], None] | None = None
    """Adds a key back at the end of the queue (a sync that left pods for later)."""
    # Syncs the key again after that many seconds (a TTL running out); None in tests.
    requeue_after: Callable[[str, float], None] | None = None
    #: Spaces out progress-only writes (hostfile, replica counts) while a job fans out.
    progress: ProgressWrites = field(init=False)

    def __post_init__(self) -> None:
        if self.expectations is None:
            self.expectations = CreationExpectations(self.clock)
        self.progress = ProgressWrites(self.clock)


#: Pods by "<namespace>/<job-name label>": a job's pods without scanning its namespace.
JOB_NAME_INDEX = "job-name"


def job_name_index(obj: Obj) -> list[str]:
    meta = obj.get("metadata") or {}
    name = (meta.get("labels") or {}).get(JOB_NAME_LABEL)
    return [f"{meta.get('namespace', '')}/{name}"] if name else []


def job_reference(shared: Obj) -> Obj:
    """The MPIJob as events refer to it; list items may lack apiVersion and kind."""
    return {**shared, "apiVersion": API_VERSION, "kind": KIND}


def with_operator_label(obj: Obj) -> Obj:
    """Adds the label our label-filtered caches select on (deliberate, not upstream)."""
    meta = obj.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), OPERATOR_NAME_LABEL: OPERATOR_NAME}
    return obj


def has_operator_label(obj: Obj) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(OPERATOR_NAME_LABEL) == OPERATOR_NAME)


def restart_attempt(job: MPIJob) -> int:
    """How many times the failure policy restarted the job: the children's generation."""
    return (job.status.restart_count if job.status else None) or 0


def attempt_of(obj: Obj) -> int:
    """The restart attempt a pod or launcher Job was made for (0: before any restart)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    try:
        return int(labels.get(RESTART_ATTEMPT_LABEL) or 0)
    except ValueError:
        return 0


def with_restart_attempt(obj: Obj, job: MPIJob) -> Obj:
    """Labels a child made after a restart (ours); before any, children stay as upstream's."""
    attempt = restart_attempt(job)
    if attempt:
        meta = obj.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), RESTART_ATTEMPT_LABEL: str(attempt)}
    return obj
