"""What a Kubeflow MPIJob sync needs: the kit's context plus the caches, settings and
metrics, and the labels that tie children to their job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.api.v2beta1 import (
    API_VERSION,
    JOB_NAME_LABEL,
    JOB_ROLE_LABEL,
    KIND,
    OPERATOR_NAME,
    OPERATOR_NAME_LABEL,
    RESTART_ATTEMPT_LABEL,
    MPIJob,
)
from mpi_operator.builders.kubeflow.common import WORKER
from mpi_operator.client import Lister
from mpi_operator.controller.core.context import CoreContext
from mpi_operator.controller.core.job_sync import JobSync
from mpi_operator.controller.core.objects import labels_of
from mpi_operator.controller.core.on_demand import OnDemandCache
from mpi_operator.controller.core.owner import Owner, reference
from mpi_operator.controller.kubeflow.metrics import ControllerMetrics
from mpi_operator.controller.options import ControllerOptions

OPERATOR_SELECTOR = f"{OPERATOR_NAME_LABEL}={OPERATOR_NAME}"
#: The Kind in the ErrResourceExists message of most children: the reference reads it
#: from typed cache objects, where it is empty; we keep its exact text.
NO_KIND = ""


@dataclass(slots=True)
class Listers:
    mpijobs: Lister
    pods: Lister
    jobs: Lister
    services: Lister
    configmaps: Lister
    secrets: Lister
    pod_groups: OnDemandCache | None = None
    """The gang scheduler's PodGroups (with ``--gang-scheduling``), cached once a sync
    needs them and their API is served."""
    priority_classes: Lister | None = None


@dataclass(slots=True, kw_only=True)
class SyncContext(CoreContext):
    listers: Listers
    options: ControllerOptions
    metrics: ControllerMetrics


#: One sync of a Kubeflow MPIJob (:class:`~.sync.MPIJobSync`), as its children's helpers
#: take it: the context, the owner, the job and its key, whatever the sync decides.
KubeflowSync = JobSync[SyncContext, MPIJob, Any]


#: Our worker pods by "<namespace>/<job-name label>": a job's workers, without scanning
#: its namespace or filtering its other pods on every sync.
WORKERS_INDEX = "mpijob-workers"


def worker_selector(job_name: str) -> str:
    """The label selector of the job's worker pods that :func:`workers_index` files."""
    return (
        f"{OPERATOR_NAME_LABEL}={OPERATOR_NAME},{JOB_NAME_LABEL}={job_name},"
        f"{JOB_ROLE_LABEL}={WORKER}"
    )


def workers_index(obj: Obj) -> list[str]:
    meta = metadata_of(obj)
    labels = meta.get("labels") or {}
    name = labels.get(JOB_NAME_LABEL)
    if (
        not name
        or labels.get(JOB_ROLE_LABEL) != WORKER
        or labels.get(OPERATOR_NAME_LABEL) != OPERATOR_NAME
    ):
        return []
    return [f"{meta.get('namespace', '')}/{name}"]


def job_reference(shared: Obj) -> Obj:
    """The MPIJob as events refer to it; list items may lack apiVersion and kind."""
    return reference(shared, API_VERSION, KIND)


def owner_of(shared: Obj) -> Owner:
    return Owner.of(shared, API_VERSION, KIND, {OPERATOR_NAME_LABEL: OPERATOR_NAME})


def restart_attempt(job: MPIJob) -> int:
    """How many times the failure policy restarted the job: the children's generation."""
    return (job.status.restart_count if job.status else None) or 0


def attempt_of(obj: Obj) -> int:
    """The restart attempt a pod or launcher Job was made for (0: before any restart)."""
    try:
        return int(labels_of(obj).get(RESTART_ATTEMPT_LABEL) or 0)
    except ValueError:
        return 0


def with_restart_attempt(obj: Obj, job: MPIJob) -> Obj:
    """Labels a child made after a restart (ours); before any, children stay as upstream's."""
    attempt = restart_attempt(job)
    if attempt:
        meta = obj.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), RESTART_ATTEMPT_LABEL: str(attempt)}
    return obj
