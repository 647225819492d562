"""Names, labels, owner references and the MPI container of T9k MPIJob children."""

from __future__ import annotations

from mpi_operator.api.object_model import Obj
from mpi_operator.api.t9k import (
    API_VERSION,
    JOB_NAME_LABEL,
    KIND,
    OPERATOR_LABEL,
    OPERATOR_NAME,
    MPIJob,
)
from mpi_operator.api.t9k.slots import GPU_RESOURCE as GPU_RESOURCE
from mpi_operator.api.t9k.slots import gpu_slots as gpu_slots
from mpi_operator.api.t9k.slots import mpi_container_index as mpi_container_index
from mpi_operator.builders.meta import controller_reference, object_meta

LAUNCHER_SUFFIX = "-launcher"
WORKER_SUFFIX = "-worker"
CONFIG_SUFFIX = "-config"
SSH_SECRET_SUFFIX = "-ssh"
SSH_PORT = 22


def owner_reference(job: MPIJob) -> Obj:
    return controller_reference(API_VERSION, KIND, job.name, job.uid)


def job_labels(job: MPIJob) -> dict[str, str]:
    """The labels of every child; the Service selects pods on them."""
    return {OPERATOR_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job.name}


def child_metadata(job: MPIJob, name: str) -> Obj:
    return object_meta(name, job.namespace, job_labels(job), owner_reference(job))


def worker_name(job: MPIJob, index: int) -> str:
    return f"{job.name}{WORKER_SUFFIX}-{index}"


def launcher_name(job: MPIJob) -> str:
    return job.name + LAUNCHER_SUFFIX


def config_name(job: MPIJob) -> str:
    return job.name + CONFIG_SUFFIX


def secret_name(job: MPIJob) -> str:
    return job.name + SSH_SECRET_SUFFIX


def host_name(job: MPIJob, pod_name: str) -> str:
    """The DNS name of a pod through the job's headless Service."""
    return f"{pod_name}.{job.name}.{job.namespace}.svc"
