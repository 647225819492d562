"""The headless Service ``<job>`` that gives every pod of the job a DNS name."""

from __future__ import annotations

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import JOB_NAME_LABEL, OPERATOR_NAME, OPERATOR_NAME_LABEL, MPIJob
from mpi_operator.builders.kubeflow.common import child_metadata, run_launcher_as_worker


def new_job_service(job: MPIJob) -> Obj:
    spec: Obj = {
        "clusterIP": "None",
        "selector": {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job.name},
    }
    if run_launcher_as_worker(job):
        # The launcher must resolve itself before it is Ready; publishing
        # not-ready addresses only for this case avoids that deadlock.
        spec["publishNotReadyAddresses"] = True
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": child_metadata(job, job.name),
        "spec": spec,
    }
