"""The ConfigMap ``<job>-config``: the MPI hostfile and ``discover_hosts.sh``."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from operator import itemgetter

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import MPIImplementation, MPIJob
from mpi_operator.builders.kubeflow.common import (
    CONFIG_SUFFIX,
    DISCOVER_HOSTS_SCRIPT_NAME,
    HOSTFILE_NAME,
    LAUNCHER_SUFFIX,
    child_metadata,
    domain_suffix,
    host_domain,
    launcher_name,
    run_launcher_as_worker,
    worker_names,
)


def _hostfile_line(implementation: str, host: str, slots: int) -> str:
    if implementation == MPIImplementation.OPEN_MPI:
        return f"{host} slots={slots}\n"
    if implementation in (MPIImplementation.INTEL, MPIImplementation.MPICH):
        return f"{host}:{slots}\n"
    return ""


def hostfile(job: MPIJob, worker_replicas: int, cluster_domain: str = "") -> str:
    slots = job.spec.slots_per_worker if job.spec.slots_per_worker is not None else 1
    return _hostfile(
        job.name,
        job.namespace,
        worker_replicas,
        slots,
        job.spec.mpi_implementation or "",
        run_launcher_as_worker(job),
        cluster_domain,
    )


# The hostfile depends only on these values; a sync of a big job would otherwise
# rebuild thousands of lines every time. Small: a job's hostfile is up to ~1 MiB.
@functools.lru_cache(maxsize=8)
def _hostfile(
    job_name: str,
    namespace: str,
    replicas: int,
    slots: int,
    implementation: str,
    launcher_as_worker: bool,
    cluster_domain: str,
) -> str:
    suffix = domain_suffix(job_name, namespace, cluster_domain)
    names = [job_name + LAUNCHER_SUFFIX] if launcher_as_worker else []
    names += worker_names(job_name, replicas)
    return "".join(_hostfile_line(implementation, name + suffix, slots) for name in names)


def discover_hosts_script(
    job: MPIJob, running_worker_pods: Iterable[Obj], cluster_domain: str = ""
) -> str:
    """A script printing the hosts that run now: the launcher if it works, then workers by name."""
    lines = ["#!/bin/sh\n"]
    if run_launcher_as_worker(job):
        host = host_domain(launcher_name(job), job, job.namespace, cluster_domain)
        lines.append(f"echo {host}\n")
    job_name = job.name
    metas = (pod["metadata"] for pod in running_worker_pods)
    # By name only, stable: as the hosts were always ordered.
    pods = sorted(((str(m["name"]), m.get("namespace", "")) for m in metas), key=itemgetter(0))
    lines += [f"echo {name}{domain_suffix(job_name, ns, cluster_domain)}\n" for name, ns in pods]
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
