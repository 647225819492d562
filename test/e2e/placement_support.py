"""Where each MPI rank ran, checked against the job's hostfile.

Every program the real-node tests run prints ``rank R of N on HOST`` for each rank
(``MPI_Get_processor_name``: the pod's host name). A job whose ranks all started on the
launcher, or on one worker, succeeds all the same, so the tests compare those lines
with the hostfile the operator wrote: mpirun (Open MPI, MPICH's Hydra) fills each host's
slots in the hostfile's order, so rank R runs on the host holding the R-th slot.
"""

from __future__ import annotations

import re
from typing import Any

from devcluster import LocalCluster

#: Optionally after an output tag (``[1,0]<stdout>:``, Open MPI's --tag-output).
RANK_LINE = re.compile(r"rank (\d+) of (\d+) on ([A-Za-z0-9.-]+)")
#: Open MPI's ``host slots=N``, MPICH's and Intel MPI's ``host:N``.
HOSTFILE_LINE = re.compile(r"^(\S+?)(?: slots=|:)(\d+)$")


def rank_hosts(log: str) -> dict[int, str]:
    """Rank -> short host name, from the ``rank R of N on HOST`` lines of ``log``."""
    hosts: dict[int, str] = {}
    sizes = set()
    for rank, size, host in RANK_LINE.findall(log):
        assert int(rank) not in hosts, f"rank {rank} printed twice:\n{log}"
        hosts[int(rank)] = host.split(".")[0]
        sizes.add(int(size))
    assert len(sizes) == 1 and sorted(hosts) == list(range(sizes.pop())), log
    return hosts


def hostfile_slots(hostfile: str) -> list[tuple[str, int]]:
    """(short host name, slots) per line of a hostfile, in order."""
    out = []
    for line in hostfile.splitlines():
        match = HOSTFILE_LINE.match(line.strip())
        assert match, f"unexpected hostfile line {line!r} in:\n{hostfile}"
        out.append((match[1].split(".")[0], int(match[2])))
    return out


def expected_hosts(hostfile: str, ranks: int) -> dict[int, str]:
    """Rank -> host as mpirun maps by slot: each host's slots in the hostfile's order."""
    slots = [host for host, n in hostfile_slots(hostfile) for _ in range(n)]
    assert ranks <= len(slots), f"{ranks} ranks for {len(slots)} slots:\n{hostfile}"
    return dict(enumerate(slots[:ranks]))


def job_hostfile(cluster: LocalCluster, ns: str, job: str) -> str:
    """The hostfile of the job's ConfigMap ``<job>-config`` (Kubeflow's and T9k's)."""
    status, cm = cluster.request("GET", f"/api/v1/namespaces/{ns}/configmaps/{job}-config")
    assert status == 200, cm
    return str(cm["data"]["hostfile"])


def assert_placement(
    cluster: LocalCluster,
    ns: str,
    job: str,
    log: str,
    *,
    hosts: list[str],
    slots: int,
    hostfile: str | None = None,
) -> dict[int, str]:
    """Asserts that the hostfile lists ``hosts`` (pod names, in order) with ``slots``
    each, and that every rank in ``log`` ran where that hostfile puts it; prints and
    returns the ranks' hosts. ``hostfile``: the job's, read when it finished (a job
    whose TTL may have deleted it since); else read from its ConfigMap now."""
    if hostfile is None:
        hostfile = job_hostfile(cluster, ns, job)
    assert hostfile_slots(hostfile) == [(h, slots) for h in hosts], hostfile
    ran = rank_hosts(log)
    print(f"{job}: " + ", ".join(f"rank {r} on {h}" for r, h in sorted(ran.items())))
    assert ran == expected_hosts(hostfile, len(ran)), (ran, hostfile, log)
    return ran


def kubeflow_hosts(job: dict[str, Any]) -> tuple[list[str], int]:
    """The hosts (pod names) and slots per host a Kubeflow MPIJob's hostfile should list."""
    name = job["metadata"]["name"]
    spec = job["spec"]
    workers = spec["mpiReplicaSpecs"].get("Worker", {}).get("replicas", 0)
    hosts = [f"{name}-launcher"] if spec.get("runLauncherAsWorker") else []
    hosts += [f"{name}-worker-{i}" for i in range(workers)]
    return hosts, int(spec.get("slotsPerWorker", 1))


#: Printed by a rank wrapper that reads the pod's name from a downward-API file: which
#: container a rank ran in, where all pods share the host's name (hostNetwork).
POD_LINE = re.compile(r"rank (\d+) in pod ([a-z0-9.-]+)")


def rank_pods(log: str) -> dict[int, str]:
    """Rank -> the pod whose container it ran in, from the ``rank R in pod POD`` lines."""
    pods: dict[int, str] = {}
    for rank, pod in POD_LINE.findall(log):
        assert int(rank) not in pods, f"rank {rank} printed twice:\n{log}"
        pods[int(rank)] = pod
    return pods
