"""Names, labels, owner references and the MPI container of T9k MPIJob children."""

from __future__ import annotations

from math import ceil
from typing import Any

from mpi_operator.api.quantity import Quantity, QuantityError
from mpi_operator.api.t9k import (
    API_VERSION,
    JOB_NAME_LABEL,
    KIND,
    MPI_CONTAINER_NAME,
    OPERATOR_LABEL,
    OPERATOR_NAME,
    MPIJob,
)
from mpi_operator.builders.common import controller_reference

Obj = dict[str, Any]

LAUNCHER_SUFFIX = "-launcher"
WORKER_SUFFIX = "-worker"
CONFIG_SUFFIX = "-config"
SSH_SECRET_SUFFIX = "-ssh"
GPU_RESOURCE = "nvidia.com/gpu"
SSH_PORT = 22


def owner_reference(job: MPIJob) -> Obj:
    return controller_reference(API_VERSION, KIND, job.name, job.uid)


def job_labels(job: MPIJob) -> dict[str, str]:
    """The labels of every child; the Service selects pods on them."""
    return {OPERATOR_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job.name}


def child_metadata(job: MPIJob, name: str) -> Obj:
    return {
        "name": name,
        "namespace": job.namespace,
        "labels": job_labels(job),
        "ownerReferences": [owner_reference(job)],
    }


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


def mpi_container_index(pod_spec: Obj) -> int:
    """The container named ``mpi-worker``, else the first."""
    containers = pod_spec.get("containers") or []
    for i, container in enumerate(containers):
        if container.get("name") == MPI_CONTAINER_NAME:
            return i
    return 0


def gpu_slots(job: MPIJob) -> int:
    """Slots per worker: the MPI container's ``nvidia.com/gpu`` limit, else 1."""
    pod_spec = job.worker.template.get("spec") or {}
    containers = pod_spec.get("containers") or []
    if not containers:
        return 1
    container = containers[mpi_container_index(pod_spec)]
    limits = (container.get("resources") or {}).get("limits") or {}
    value = limits.get(GPU_RESOURCE)
    if value is None:
        return 1
    try:
        slots = ceil(Quantity.from_json(value).as_fraction())
    except (QuantityError, ValueError, TypeError):
        return 1
    return slots if slots > 0 else 1
