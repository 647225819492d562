"""Every MPI stack of the real node's images runs for real (``hack/build-node-images.sh``'s
project images ``mpi-operator-python/mpi-pi:<stack>``: Open MPI 5, Open MPI 4.1, MPICH 4.2
and Intel MPI 2021): each stack's pi example over two workers as ``mpiuser`` and as root,
then in the same job the data-parallel example (examples/v2beta1/mpi4py-sgd) wherever
sgd.yaml's own run (test_examples.py, on its mpi4py-sgd image) does not cover it, and one
worker on the host's network. The ranks' placement is asserted in every job.

The cases run side by side (real_examples_support.cases_running), each in a namespace
of its own under one operator, as many as the node's memory holds; the host-network
ones one after another, since their workers all listen on the host's port 2222."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from examples_support import EXAMPLES
from placement_support import (
    assert_placement,
    hostfile_slots,
    kubeflow_hosts,
    rank_hosts,
    rank_pods,
)
from real_examples_support import (
    CONCURRENT_RUN_TIMEOUT,
    Case,
    CaseEnv,
    Finished,
    cases_running,
    job_memory,
    run_job,
)
from real_node_support import (
    NEXT_PROGRAM,
    PI_RESULT,
    STACK_EXAMPLES,
    Obj,
    as_root,
    assert_sgd_trained,
    launcher_argv,
    set_launcher_argv,
    then_sgd,
    with_image,
)

from devcluster import LocalCluster
from devcluster.demo_job import load_mpijob
from devcluster.nodeconfig import MPI_IMAGES
from devcluster.testing import wait_until

STACKS = list(STACK_EXAMPLES)


def _probe_every_second(job: Obj) -> Obj:
    """The workers' readiness probe (pi-mpich.yaml's, pi-intel.yaml's) every second
    rather than every 10: the launcher waits for Ready workers (MPICH's
    WaitForWorkersReady) or for their names, which DNS gives only once they are Ready
    (the Intel image's entry point), and each job then starts up to 9 s sooner."""
    (container,) = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    if "readinessProbe" in container:
        container["readinessProbe"]["periodSeconds"] = 1
    return job


def _pi_job(stack: str, root: bool) -> Obj:
    example = load_mpijob(EXAMPLES / "pi" / STACK_EXAMPLES[stack])
    job = _probe_every_second(with_image(example, MPI_IMAGES[stack]))
    if root:
        job = as_root(job)
    job["metadata"]["name"] = f"pi-{stack}{'-root' if root else ''}"
    if stack == "mpich":
        # MPICH's mpirun (hydra) waits forever when a worker's name does not resolve
        # yet, where Open MPI's fails and the launcher Job retries. (The Intel image's
        # entry point waits for the names itself, as the reference's does.)
        job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    if _trains_sgd(stack, root):
        then_sgd(job)
    return job


def _trains_sgd(stack: str, root: bool) -> bool:
    return root or stack != "openmpi"


@pytest.mark.parametrize("root", [False, True], ids=["mpiuser", "root"])
@pytest.mark.parametrize("stack", STACKS)
def test_pi_example_computes_pi_across_two_workers(
    real_cluster: LocalCluster, runs: dict[str, Case[Finished]], stack: str, root: bool
) -> None:
    """pi.yaml (Open MPI 5 by default; Open MPI 4.1 with the openmpi4 image),
    pi-mpich.yaml and pi-intel.yaml, as mpiuser and as root: one rank on each worker, as
    the hostfile says. The launcher then trains sgd.py over the same two workers (but as
    mpiuser on Open MPI 5, which sgd.yaml's own test runs)."""
    job = _pi_job(stack, root)
    name = job["metadata"]["name"]
    case = runs[name]
    run = case.result(CASE_WAIT)
    log, ns, hostfile = run.log, case.namespace, run.hostfile
    pi_log, _, sgd_log = log.partition(NEXT_PROGRAM)
    assert PI_RESULT.search(pi_log), log
    hosts, slots = kubeflow_hosts(job)
    assert_placement(real_cluster, ns, name, pi_log, hosts=hosts, slots=slots, hostfile=hostfile)
    if _trains_sgd(stack, root):
        assert_placement(
            real_cluster, ns, name, sgd_log, hosts=hosts, slots=slots, hostfile=hostfile
        )
        assert_sgd_trained(sgd_log, ranks=2)


#: The pod's own name, from a downward-API volume: a process sees the file of the
#: container whose mount namespace it runs in, whatever host name it reports.
PODINFO = {
    "name": "podinfo",
    "downwardAPI": {"items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]},
}
RANK_IN_POD = (
    'echo "rank ${OMPI_COMM_WORLD_RANK:-$PMI_RANK} in pod $(cat /etc/podinfo/name)"; '
    "exec /home/mpiuser/pi"
)
MPIUSER_SSHD_PORT = 2222
#: Open MPI takes a hostfile name that resolves to one of its own addresses for its own
#: node and starts that host's ranks beside mpirun, in the launcher's container: on one
#: node's host network, the worker's address is the launcher's. Comparing names only
#: makes it ssh to the worker (Open MPI 5: PRRTE's option, on the command line, which
#: outranks the PRTE_MCA_prte_do_not_resolve=false the operator sets; Open MPI 4.1:
#: OPAL's). MPICH's and Intel MPI's hydra go by the name and need nothing.
COMPARE_NAMES_ONLY = {
    "openmpi": ["--prtemca", "prte_do_not_resolve", "1"],
    "openmpi4": ["--mca", "if_base_do_not_resolve", "1"],
}


def _on_host_network(job: Obj, stack: str) -> Obj:
    """One worker with two slots, every pod on the host's network, each with its name
    in /etc/podinfo; each rank says which pod it ran in, then runs pi."""
    job["spec"]["slotsPerWorker"] = 2
    specs = job["spec"]["mpiReplicaSpecs"]
    specs["Worker"]["replicas"] = 1
    for spec in specs.values():
        pod = spec["template"]["spec"]
        pod["hostNetwork"] = True
        pod["volumes"] = [PODINFO]
        pod["containers"][0]["volumeMounts"] = [{"name": "podinfo", "mountPath": "/etc/podinfo"}]
    mpirun, *args = launcher_argv(job)
    assert mpirun == "mpirun" and args[-1] == "/home/mpiuser/pi", args
    flags = COMPARE_NAMES_ONLY.get(stack, [])
    set_launcher_argv(job, [mpirun, *flags, *args[:-1], "sh", "-c", RANK_IN_POD])
    return job


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _host_network_job(stack: str) -> Obj:
    example = load_mpijob(EXAMPLES / "pi" / STACK_EXAMPLES[stack])
    job = _on_host_network(with_image(example, MPI_IMAGES[stack]), stack)
    job = _probe_every_second(job)
    job["metadata"]["name"] = f"pi-hostnet-{stack}"
    if stack == "mpich":
        job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    return job


def _run_on_host_network(job: Obj, env: CaseEnv) -> Finished:
    # The previous host-network case's worker (they run one after another), deleted once
    # its job succeeded, may still hold the port.
    def port_free() -> bool:
        env.check()
        return _port_free(MPIUSER_SSHD_PORT)

    wait_until(port_free, 60, "the host's port 2222 to be free")
    return run_job(job, env)


#: The host-network cases' group: their workers' sshd listen on the host's port 2222,
#: so they run one after another (beside the other cases).
HOST_PORT = f"host port {MPIUSER_SSHD_PORT}"


def _cases() -> dict[str, Case[Any]]:
    # The host-network cases first: one after another, they take the longest in all.
    host_network = [_host_network_job(stack) for stack in STACKS]
    pi = [_pi_job(stack, root) for stack in STACKS for root in (False, True)]
    cases: list[Case[Any]] = [
        *(
            Case(j["metadata"]["name"], partial(_run_on_host_network, j), job_memory(j), HOST_PORT)
            for j in host_network
        ),
        *(Case(j["metadata"]["name"], partial(run_job, j), job_memory(j)) for j in pi),
    ]
    return {case.id: case for case in cases}


#: One test's wait for its case: its own deadlines (to succeed, then 60 s for its pods
#: to go, and for a host-network case 60 s for the port), behind at most every other.
CASE_WAIT = (CONCURRENT_RUN_TIMEOUT + 120) * 3 * len(STACKS)


@pytest.fixture(scope="module")
def runs(
    real_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Case[Any]]]:
    """Every case of this module running on the real node, a namespace each, one operator
    watching them all, as many at once as the node's memory holds (the host-network
    ones one after another), started by the first test that asks; each test waits for
    its own case and checks what it kept."""
    cases = _cases()
    with cases_running(real_cluster, list(cases.values()), tmp_path_factory.mktemp("stacks")):
        yield cases


@pytest.mark.parametrize("stack", STACKS)
def test_host_network_with_one_worker_runs_the_ranks_in_the_worker(
    real_cluster: LocalCluster, runs: dict[str, Case[Finished]], stack: str
) -> None:
    """hostNetwork on the launcher and the worker (the reference's e2e case), as mpiuser:
    the worker's sshd listens on the host's port 2222. On one node every pod has the
    host's name, so the host names the ranks print only show the host network; the pod
    each rank's process ran in, read from its container's downward-API file, shows that
    mpirun reached the worker over ssh rather than starting the ranks beside itself
    (which Open MPI does here unless told to compare names only: COMPARE_NAMES_ONLY)."""
    name = f"pi-hostnet-{stack}"
    case = runs[name]
    run = case.result(CASE_WAIT)
    print(f"{name}: succeeded in {case.ran_s:.1f} s")
    log = run.log
    assert PI_RESULT.search(log), log
    worker = f"{name}-worker-0"
    assert hostfile_slots(run.hostfile) == [(worker, 2)]
    assert rank_pods(log) == {0: worker, 1: worker}, log
    host = socket.gethostname().split(".")[0]
    assert rank_hosts(log) == {0: host, 1: host}, log
