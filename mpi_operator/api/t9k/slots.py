"""The MPI container of a T9k worker and its slots in the hostfile."""

from __future__ import annotations

from math import ceil
from typing import Any

from mpi_operator.api.quantity import Quantity, QuantityError
from mpi_operator.api.t9k.types import MPI_CONTAINER_NAME, MPIJob

GPU_RESOURCE = "nvidia.com/gpu"


def mpi_container_index(pod_spec: dict[str, Any]) -> int:
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
