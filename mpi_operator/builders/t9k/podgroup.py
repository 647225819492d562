"""A T9k MPIJob's PodGroup: the t9k scheduler's (``scheduler.tensorstack.dev/v1beta1``)
when the job names that scheduler, else, with ``--gang-scheduling=workload-api``, the
Kubernetes Workload API's (ours). Both are a gang of every pod: the workers and the
launcher."""

from __future__ import annotations

from mpi_operator.api.object_model import Obj
from mpi_operator.api.t9k import SCHEDULER_API_VERSION, MPIJob
from mpi_operator.builders.t9k.common import child_metadata
from mpi_operator.builders.workload_api import workload_pod_group

POD_GROUP_KIND = "PodGroup"


def _gang_size(job: MPIJob) -> int:
    return job.worker_replicas + 1


def new_pod_group(job: MPIJob) -> Obj | None:
    """None when the job does not use the t9k scheduler."""
    scheduler = job.t9k_scheduler
    if scheduler is None:
        return None
    return {
        "apiVersion": SCHEDULER_API_VERSION,
        "kind": POD_GROUP_KIND,
        "metadata": child_metadata(job, job.name),
        "spec": {
            "minMember": _gang_size(job),
            "queue": scheduler.queue or "",
            "priority": scheduler.priority or 0,
        },
    }


def uses_workload_api(job: MPIJob, workload_api: bool) -> bool:
    """Whether the job's pods join a Workload API PodGroup: the operator runs with
    ``--gang-scheduling=workload-api`` (``workload_api``) and the job does not choose the
    t9k scheduler, which stays in charge of the jobs that name it."""
    return workload_api and job.t9k_scheduler is None


def new_workload_pod_group(job: MPIJob) -> Obj:
    """The ``scheduling.k8s.io/v1alpha2`` PodGroup named after the job, a gang of all
    its pods, labelled and owned as the job's other children."""
    return workload_pod_group(child_metadata(job, job.name), _gang_size(job))
