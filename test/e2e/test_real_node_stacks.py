"""Every MPI stack of the real node's images runs for real (``hack/build-node-images.sh``'s
project images ``mpi-operator-python/mpi-pi:<stack>``: Open MPI 5, Open MPI 4.1, MPICH 4.2
and Intel MPI 2021): each stack's pi example over two workers as ``mpiuser`` and as root,
then in the same job the data-parallel example (examples/v2beta1/mpi4py-sgd) wherever
sgd.yaml's own run (test_examples.py, on its mpi4py-sgd image) does not cover it, and one
worker on the host's network. The ranks' placement is asserted in every job."""

from __future__ import annotations

import socket
import time

import pytest
from examples_support import EXAMPLES
from placement_support import (
    assert_placement,
    hostfile_slots,
    job_hostfile,
    kubeflow_hosts,
    rank_hosts,
    rank_pods,
)
from real_node_support import (
    NEXT_PROGRAM,
    PI_RESULT,
    STACK_EXAMPLES,
    Obj,
    as_root,
    assert_sgd_trained,
    launcher_argv,
    run_kubeflow,
    set_launcher_argv,
    then_sgd,
    with_image,
)

from devcluster import LocalCluster
from devcluster.demo_job import load_mpijob
from devcluster.nodeconfig import MPI_IMAGES
from devcluster.testing import OperatorProcess, wait_until

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


@pytest.mark.parametrize("root", [False, True], ids=["mpiuser", "root"])
@pytest.mark.parametrize("stack", STACKS)
def test_pi_example_computes_pi_across_two_workers(
    real_cluster: LocalCluster,
    real_ns: str,
    operator: OperatorProcess,
    stack: str,
    root: bool,
) -> None:
    """pi.yaml (Open MPI 5 by default; Open MPI 4.1 with the openmpi4 image),
    pi-mpich.yaml and pi-intel.yaml, as mpiuser and as root: one rank on each worker, as
    the hostfile says. The launcher then trains sgd.py over the same two workers (but as
    mpiuser on Open MPI 5, which sgd.yaml's own test runs)."""
    example = load_mpijob(EXAMPLES / "pi" / STACK_EXAMPLES[stack])
    job = _probe_every_second(with_image(example, MPI_IMAGES[stack]))
    if root:
        job = as_root(job)
    name = job["metadata"]["name"] = f"pi-{stack}{'-root' if root else ''}"
    if stack == "mpich":
        # MPICH's mpirun (hydra) waits forever when a worker's name does not resolve
        # yet, where Open MPI's fails and the launcher Job retries. (The Intel image's
        # entry point waits for the names itself, as the reference's does.)
        job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    sgd = root or stack != "openmpi"
    if sgd:
        then_sgd(job)
    _, log = run_kubeflow(real_cluster, real_ns, job, operator)
    pi_log, _, sgd_log = log.partition(NEXT_PROGRAM)
    assert PI_RESULT.search(pi_log), log
    hosts, slots = kubeflow_hosts(job)
    assert_placement(real_cluster, real_ns, name, pi_log, hosts=hosts, slots=slots)
    if sgd:
        assert_placement(real_cluster, real_ns, name, sgd_log, hosts=hosts, slots=slots)
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


@pytest.mark.parametrize("stack", STACKS)
def test_host_network_with_one_worker_runs_the_ranks_in_the_worker(
    real_cluster: LocalCluster, real_ns: str, operator: OperatorProcess, stack: str
) -> None:
    """hostNetwork on the launcher and the worker (the reference's e2e case), as mpiuser:
    the worker's sshd listens on the host's port 2222. On one node every pod has the
    host's name, so the host names the ranks print only show the host network; the pod
    each rank's process ran in, read from its container's downward-API file, shows that
    mpirun reached the worker over ssh rather than starting the ranks beside itself
    (which Open MPI does here unless told to compare names only: COMPARE_NAMES_ONLY)."""
    # A previous case's worker, deleted once its job succeeded, may still hold the port.
    wait_until(lambda: _port_free(MPIUSER_SSHD_PORT), 60, "the host's port 2222 to be free")
    example = load_mpijob(EXAMPLES / "pi" / STACK_EXAMPLES[stack])
    job = _on_host_network(with_image(example, MPI_IMAGES[stack]), stack)
    job = _probe_every_second(job)
    name = job["metadata"]["name"] = f"pi-hostnet-{stack}"
    if stack == "mpich":
        job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    started = time.monotonic()
    _, log = run_kubeflow(real_cluster, real_ns, job, operator)
    print(f"{name}: succeeded in {time.monotonic() - started:.1f} s")
    assert PI_RESULT.search(log), log
    worker = f"{name}-worker-0"
    assert hostfile_slots(job_hostfile(real_cluster, real_ns, name)) == [(worker, 2)]
    assert rank_pods(log) == {0: worker, 1: worker}, log
    host = socket.gethostname().split(".")[0]
    assert rank_hosts(log) == {0: host, 1: host}, log
