"""The ConfigMap ``<job>-config`` holding the OpenMPI hostfile."""

from __future__ import annotations

from mpi_operator.api.object_model import Obj
from mpi_operator.api.t9k import MPIJob
from mpi_operator.builders.t9k.common import (
    child_metadata,
    config_name,
    gpu_slots,
    host_name,
    worker_name,
)

HOSTFILE_KEY = "hostfile"
CONFIG_MOUNT_PATH = "/etc/mpi"
HOSTFILE_PATH = f"{CONFIG_MOUNT_PATH}/{HOSTFILE_KEY}"


def worker_hosts(job: MPIJob) -> list[str]:
    return [host_name(job, worker_name(job, i)) for i in range(job.worker_replicas)]


def hostfile(job: MPIJob) -> str:
    slots = gpu_slots(job)
    return "".join(f"{host} slots={slots}\n" for host in worker_hosts(job))


def new_config_map(job: MPIJob) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": child_metadata(job, config_name(job)),
        "data": {HOSTFILE_KEY: hostfile(job)},
    }
