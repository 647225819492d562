"""The ConfigMap ``<job>-config``: the MPI hostfile and ``discover_hosts.sh``."""

from __future__ import annotations

from collections.abc import Iterable

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import MPIImplementation, MPIJob
from mpi_operator.builders.kubeflow.common import (
    CONFIG_SUFFIX,
    DISCOVER_HOSTS_SCRIPT_NAME,
    HOSTFILE_NAME,
    child_metadata,
    host_domain,
    launcher_name,
    run_launcher_as_worker,
    worker_name,
)


def _hostfile_line(implementation: str, host: str, slots: int) -> str:
    if implementation == MPIImplementation.OPEN_MPI:
        return f"{host} slots={slots}\n"
    if implementation in (MPIImplementation.INTEL, MPIImplementation.MPICH):
        return f"{host}:{slots}\n"
    return ""


def hostfile(job: MPIJob, worker_replicas: int, cluster_domain: str = "") -> str:
    slots = job.spec.slots_per_worker if job.spec.slots_per_worker is not None else 1
    implementation = job.spec.mpi_implementation or ""
    names = [launcher_name(job)] if run_launcher_as_worker(job) else []
    names += [worker_name(job, i) for i in range(worker_replicas)]
    return "".join(
        _hostfile_line(implementation, host_domain(n, job, job.namespace, cluster_domain), slots)
        for n in names
    )


def discover_hosts_script(
    job: MPIJob, running_worker_pods: Iterable[Obj], cluster_domain: str = ""
) -> str:
    """A script printing the hosts that run now: the launcher if it works, then workers by name."""
    lines = ["#!/bin/sh\n"]
    if run_launcher_as_worker(job):
        host = host_domain(launcher_name(job), job, job.namespace, cluster_domain)
        lines.append(f"echo {host}\n")
    pods = sorted(running_worker_pods, key=lambda p: str(p["metadata"]["name"]))
    for pod in pods:
        meta = pod["metadata"]
        host = host_domain(meta["name"], job, meta.get("namespace", ""), cluster_domain)
        lines.append(f"echo {host}\n")
    return "".join(lines)


def new_config_map(
    job: MPIJob,
    worker_replicas: int,
    running_worker_pods: Iterable[Obj] = (),
    cluster_domain: str = "",
) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": child_metadata(job, job.name + CONFIG_SUFFIX),
        "data": {
            HOSTFILE_NAME: hostfile(job, worker_replicas, cluster_domain),
            DISCOVER_HOSTS_SCRIPT_NAME: discover_hosts_script(
                job, running_worker_pods, cluster_domain
            ),
        },
    }
