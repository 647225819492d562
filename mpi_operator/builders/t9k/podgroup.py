"""The ``scheduler.tensorstack.dev/v1beta1`` PodGroup of a job using the t9k scheduler."""

from __future__ import annotations

from mpi_operator.api.object_model import Obj
from mpi_operator.api.t9k import SCHEDULER_API_VERSION, MPIJob
from mpi_operator.builders.t9k.common import child_metadata

POD_GROUP_KIND = "PodGroup"


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
            "minMember": job.worker_replicas + 1,
            "queue": scheduler.queue or "",
            "priority": scheduler.priority or 0,
        },
    }
