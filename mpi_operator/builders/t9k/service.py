"""The headless Service ``<job>`` that gives the launcher and workers DNS names."""

from __future__ import annotations

from mpi_operator.api.object_model import Obj
from mpi_operator.api.t9k import MPIJob
from mpi_operator.builders.t9k.common import child_metadata, job_labels


def new_service(job: MPIJob) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": child_metadata(job, job.name),
        "spec": {
            "clusterIP": "None",
            "selector": job_labels(job),
            # The launcher's init container must resolve workers before they are Ready.
            "publishNotReadyAddresses": True,
        },
    }
