"""MPI programs run for real: the operator's MPIJobs on the ``real`` shape's node, whose
containers come from the images of ``hack/build-node-images.sh`` (examples/v2beta1/pi's
program, built with Open MPI 5 (the default ``openmpi`` tag), Open MPI 4.1 (``openmpi4``)
and MPICH). Each test checks what the launcher printed, which only a run that went
through everything shows: the SSH key Secret mounted with working modes, sshd in the
workers, the hostfile's names resolved by CoreDNS from the headless Service, mpirun
reaching every worker, and each rank on the host the hostfile gives it
(placement_support)."""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from examples_support import EXAMPLES, apply, docs, items, start_operator, wait_for_condition
from placement_support import assert_placement, kubeflow_hosts

from devcluster import LocalCluster
from devcluster.crds import crds_installed
from devcluster.demo import load_mpijob
from devcluster.sample_jobs import on_real_node
from devcluster.testing import OperatorProcess, wait_until
from mpi_operator.builders.t9k.pods import DEFAULT_INIT_IMAGE

ROOT = Path(__file__).resolve().parents[2]
T9K_CRD = ROOT / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"
T9K_PI = ROOT / "examples" / "t9k" / "pi.yaml"
PI_RESULT = re.compile(r"pi is approximately 3\.14\d+ \(2 ranks")
#: A cold container start on a loaded 2-core machine, then 10^8 samples.
RUN_TIMEOUT = 240.0

Obj = dict[str, Any]


@pytest.fixture
def real_ns(real_cluster: LocalCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    prefix = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).removeprefix("test-")
    name = real_cluster.create_namespace(prefix[:30].strip("-"))
    yield name
    real_cluster.delete_namespace(name)


@pytest.fixture
def operator(real_cluster: LocalCluster, real_ns: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    proc = start_operator(
        tmp_path, real_cluster.kubeconfig, f"--namespace={real_ns}", f"--lock-namespace={real_ns}"
    )
    try:
        yield proc
    finally:
        proc.kill()
        print(f"--- operator log ---\n{proc.output()[-6000:]}")


def _launcher_pod(cluster: LocalCluster, ns: str, job: str) -> Obj:
    pods = [
        p
        for p in items(cluster, f"/api/v1/namespaces/{ns}/pods")
        if p["metadata"]["name"].startswith(f"{job}-launcher")
    ]
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    return pods[0]


def _launcher_log(cluster: LocalCluster, ns: str, job: str) -> str:
    pod = _launcher_pod(cluster, ns, job)["metadata"]["name"]
    return str(cluster.kubectl("logs", "-n", ns, pod).stdout)


def _explain(cluster: LocalCluster, ns: str) -> str:
    """The pods, the end of their containers' logs and the events of ``ns``, for a
    failure's message."""
    pods = cluster.kubectl("get", "pods", "-n", ns, "-o", "wide", check=False).stdout
    logs = [
        cluster.kubectl(
            "logs",
            "-n",
            ns,
            pod["metadata"]["name"],
            "--all-containers",
            "--prefix",
            "--tail=30",
            check=False,
        ).stdout
        for pod in items(cluster, f"/api/v1/namespaces/{ns}/pods")
    ]
    events = cluster.kubectl("get", "events", "-n", ns, check=False).stdout
    return "\n".join([pods, *logs, events])


def _run_kubeflow(
    cluster: LocalCluster, ns: str, job: Obj, proc: OperatorProcess
) -> tuple[Obj, str]:
    """Applies the job on the real node, waits for Succeeded, returns it and the launcher's
    log."""
    apply(cluster, ns, on_real_node(job))
    name = job["metadata"]["name"]
    try:
        done = wait_for_condition(cluster, ns, name, "Succeeded", proc, timeout=RUN_TIMEOUT)
    except BaseException:
        print(_explain(cluster, ns))
        raise
    return done, _launcher_log(cluster, ns, name)


#: Each rank says it started, then waits before computing: long enough for the test to
#: kill a worker while the job's MPI processes run there.
RANK_WRAPPER = "echo rank started on $(cat /etc/hostname); sleep 8; exec /home/mpiuser/pi"


def _container_pid(cluster: LocalCluster, pod: Obj) -> int:
    """The host PID of the pod's container's main process, from its containerd task."""
    (status,) = pod["status"]["containerStatuses"]
    container_id = str(status["containerID"]).removeprefix("containerd://")
    assert cluster.node is not None
    socket = str(cluster.node.layout.containerd_socket)
    tasks = subprocess.run(
        ["ctr", "--address", socket, "-n", "k8s.io", "tasks", "ls"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for line in tasks.splitlines()[1:]:
        task, pid, *_ = line.split()
        if task == container_id:
            return int(pid)
    raise AssertionError(f"no containerd task {container_id} in:\n{tasks}")


def _killable_pi(name: str, action: str) -> Obj:
    """The pi job whose ranks wait before computing, with one restart by ``action`` on a
    worker killed (exit 137)."""
    job = load_mpijob(EXAMPLES / "pi" / "pi-failure-policy.yaml")
    job["metadata"]["name"] = name
    job["spec"]["runPolicy"]["failurePolicy"] = {
        "maxRestarts": 1,
        "rules": [
            {
                "name": "worker-killed",
                "action": action,
                "targetReplicaTypes": ["Worker"],
                "onExitCodes": {"containerName": "mpi-worker", "operator": "In", "values": [137]},
            }
        ],
    }
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["args"] = ["-n", "2", "sh", "-c", RANK_WRAPPER]
    return job


def test_a_worker_killed_for_real_restarts_the_job_which_then_computes_pi(
    real_cluster: LocalCluster, real_ns: str, operator: OperatorProcess
) -> None:
    name = "pi-killed"
    apply(real_cluster, real_ns, on_real_node(_killable_pi(name, "RestartJob")))
    worker_path = f"/api/v1/namespaces/{real_ns}/pods/{name}-worker-1"

    def both_ranks_started() -> bool:
        assert operator.poll() is None, operator.output()[-4000:]
        return _launcher_log(real_cluster, real_ns, name).count("rank started on") == 2

    try:
        wait_until(both_ranks_started, RUN_TIMEOUT, f"{name}'s ranks started on both workers")
        status, worker = real_cluster.request("GET", worker_path)
        assert status == 200, worker
        # The worker's sshd, PID 1 of its container, with the rank's processes under it.
        os.kill(_container_pid(real_cluster, worker), signal.SIGKILL)
        done = wait_for_condition(
            real_cluster, real_ns, name, "Succeeded", operator, timeout=RUN_TIMEOUT
        )
    except BaseException:
        print(_explain(real_cluster, real_ns))
        raise
    status = done["status"]
    assert status["restartCount"] == 1, status
    failure = status["lastFailure"]
    assert failure["pod"] == f"{name}-worker-1", failure
    assert failure["exitCode"] == 137, failure
    assert failure["message"] == (
        f"worker {name}-worker-1 container mpi-worker terminated: Error (exit 137)"
    ), failure
    # The launcher of the second run computed pi on the new workers.
    log = _launcher_log(real_cluster, real_ns, name)
    assert PI_RESULT.search(log), log
    assert log.count("rank started on") == 2, log
    assert_placement(
        real_cluster, real_ns, name, log, hosts=[f"{name}-worker-{i}" for i in (0, 1)], slots=1
    )
    launcher_job = real_cluster.request(
        "GET", f"/apis/batch/v1/namespaces/{real_ns}/jobs/{name}-launcher"
    )[1]
    assert launcher_job["metadata"]["labels"]["training.kubeflow.org/restart-attempt"] == "1"


def _as_root(job: Obj) -> Obj:
    """The job with every container as root, as the reference's root specs run: sshd on
    port 22 with Debian's configuration, the SSH Secret in /root/.ssh, mpirun allowed
    to run as root."""
    job["spec"]["sshAuthMountPath"] = "/root/.ssh"
    for role, spec in job["spec"]["mpiReplicaSpecs"].items():
        (container,) = spec["template"]["spec"]["containers"]
        container["securityContext"] = {"runAsUser": 0}
        if role == "Worker":
            if "readinessProbe" in container:
                container["readinessProbe"]["tcpSocket"]["port"] = 22
            container.pop("command", None)
            container["args"] = ["/usr/sbin/sshd", "-De"]
        else:
            container["env"] = [
                {"name": "OMPI_ALLOW_RUN_AS_ROOT", "value": "1"},
                {"name": "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "value": "1"},
            ]
    return job


def _with_image(job: Obj, image: str) -> Obj:
    for spec in job["spec"]["mpiReplicaSpecs"].values():
        for container in spec["template"]["spec"]["containers"]:
            container["image"] = image
    return job


@pytest.mark.parametrize(
    ("stack", "root"),
    [
        ("openmpi", False),
        ("openmpi", True),
        ("openmpi4", False),
        ("openmpi4", True),
        ("mpich", False),
        ("mpich", True),
    ],
)
def test_pi_example_computes_pi_across_two_workers(
    real_cluster: LocalCluster,
    real_ns: str,
    operator: OperatorProcess,
    stack: str,
    root: bool,
) -> None:
    """pi.yaml (Open MPI 5 by default; Open MPI 4.1 with the openmpi4 image) and
    pi-mpich.yaml, as mpiuser and as root: one rank on each worker, as the hostfile says."""
    example = "pi-mpich.yaml" if stack == "mpich" else "pi.yaml"
    job = _with_image(load_mpijob(EXAMPLES / "pi" / example), f"mpioperator/mpi-pi:{stack}")
    if root:
        job = _as_root(job)
    name = job["metadata"]["name"] = f"pi-{stack}{'-root' if root else ''}"
    if stack == "mpich":
        # MPICH's mpirun (hydra) waits forever when a worker's name does not resolve
        # yet, where Open MPI's fails and the launcher Job retries.
        job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    _, log = _run_kubeflow(real_cluster, real_ns, job, operator)
    assert PI_RESULT.search(log), log
    hosts, slots = kubeflow_hosts(job)
    assert_placement(real_cluster, real_ns, name, log, hosts=hosts, slots=slots)


def test_run_launcher_as_worker_puts_a_rank_on_the_launcher(
    real_cluster: LocalCluster, real_ns: str, operator: OperatorProcess
) -> None:
    job = load_mpijob(EXAMPLES / "pi" / "pi.yaml")
    job["metadata"]["name"] = "pi-law"
    job["spec"]["runLauncherAsWorker"] = True
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["args"] = ["-n", "3", "/home/mpiuser/pi"]
    _, log = _run_kubeflow(real_cluster, real_ns, job, operator)
    assert re.search(r"pi is approximately 3\.14\d+ \(3 ranks", log), log
    hosts, slots = kubeflow_hosts(job)
    assert hosts == ["pi-law-launcher", "pi-law-worker-0", "pi-law-worker-1"], hosts
    assert_placement(real_cluster, real_ns, "pi-law", log, hosts=hosts, slots=slots)


def _sgd_module() -> Any:
    """examples/v2beta1/mpi4py-sgd/sgd.py, imported (numpy only; mpi4py only in main)."""
    path = EXAMPLES / "mpi4py-sgd" / "sgd.py"
    spec = importlib.util.spec_from_file_location("sgd_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mpi4py_sgd_example_trains_as_one_process_would(
    real_cluster: LocalCluster, real_ns: str, operator: OperatorProcess
) -> None:
    """Data-parallel gradient descent over two workers' ranks (Open MPI 5): the loss
    falls every epoch, and the final weights equal a single process's on all the rows."""
    job = load_mpijob(EXAMPLES / "mpi4py-sgd" / "sgd.yaml")
    _, log = _run_kubeflow(real_cluster, real_ns, job, operator)
    hosts, slots = kubeflow_hosts(job)
    assert_placement(real_cluster, real_ns, "mpi4py-sgd", log, hosts=hosts, slots=slots)
    losses = [float(v) for v in re.findall(r"^epoch \d+ loss (\S+)$", log, re.M)]
    sgd = _sgd_module()
    assert len(losses) == sgd.EPOCHS, log
    assert all(b < a for a, b in itertools.pairwise(losses)), losses
    assert losses[-1] < 0.5 * losses[0], losses
    weights = re.search(r"^weights ((?:\S+ ?)+)$", log, re.M)
    assert weights, log
    x, y = sgd.dataset()
    single, single_losses = sgd.train(x, y, len(y))
    ran = [float(v) for v in weights[1].split()]
    assert max(abs(a - b) for a, b in zip(ran, single, strict=True)) < 1e-9, (ran, single)
    # The log prints the losses to 6 decimals.
    assert max(abs(a - b) for a, b in zip(losses, single_losses, strict=True)) <= 5e-7
    checksum = re.search(r"weights checksum (\S+) \(2 ranks\)", log)
    assert checksum and abs(float(checksum[1]) - sgd.checksum(single)) < 1e-8, log
    spread = re.search(r"largest weight difference between ranks (\S+)", log)
    assert spread and float(spread[1]) < 1e-12, log


def _ready_since(pod: Obj) -> str:
    for c in pod["status"].get("conditions") or []:
        if c["type"] == "Ready" and c["status"] == "True":
            return str(c["lastTransitionTime"])
    raise AssertionError(f"{pod['metadata']['name']} is not Ready: {pod['status']}")


def test_wait_for_workers_ready_creates_the_launcher_after_sshd_is_ready(
    real_cluster: LocalCluster, real_ns: str, operator: OperatorProcess
) -> None:
    job = load_mpijob(EXAMPLES / "pi" / "pi.yaml")
    job["metadata"]["name"] = "pi-wait"
    job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    job["spec"]["runPolicy"]["cleanPodPolicy"] = "None"
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    # Ready only once sshd listens, a few seconds after the container started.
    worker["readinessProbe"] = {"tcpSocket": {"port": 2222}, "initialDelaySeconds": 3}
    _, log = _run_kubeflow(real_cluster, real_ns, job, operator)
    assert PI_RESULT.search(log), log
    hosts, slots = kubeflow_hosts(job)
    assert_placement(real_cluster, real_ns, "pi-wait", log, hosts=hosts, slots=slots)
    launcher = _launcher_pod(real_cluster, real_ns, "pi-wait")
    created = launcher["metadata"]["creationTimestamp"]
    for i in (0, 1):
        path = f"/api/v1/namespaces/{real_ns}/pods/pi-wait-worker-{i}"
        status, pod = real_cluster.request("GET", path)
        assert status == 200, pod
        # RFC 3339 UTC timestamps of one format compare as strings.
        assert _ready_since(pod) <= created, (pod["status"], created)


@pytest.fixture
def t9k_crd(real_cluster: LocalCluster) -> Iterator[None]:
    with crds_installed(real_cluster, (T9K_CRD,)):
        yield


@pytest.mark.parametrize("stack", ["openmpi", "openmpi4"])
def test_t9k_generated_mpirun_line_runs_the_program(
    real_cluster: LocalCluster,
    real_ns: str,
    t9k_crd: None,
    operator: OperatorProcess,
    stack: str,
) -> None:
    """The line runs on Open MPI 5 and 4.1. Its hostfile is an explicit --hostfile, which
    both read. Its `--mca orte_*` names mean something only to Open MPI 4 (ORTE): under
    Open MPI 5 they reach the ranks' environment only, so only 4.1 tags the output. (Open
    MPI 5 still reaches the workers by the hostfile's full names: PRRTE's ssh launcher
    uses a host's name as the hostfile gives it.)"""
    (job,) = docs(T9K_PI)
    # Debian's Open MPI lives under /usr; orte_tag_output shows that the mca reached mpirun.
    job["spec"]["mpiHome"] = "/usr"
    job["spec"]["mca"]["orte_tag_output"] = "1"
    template = job["spec"]["worker"]["template"]
    template["spec"]["containers"][0]["image"] = f"mpioperator/mpi-pi:{stack}"
    apply(real_cluster, real_ns, on_real_node(job))
    path = f"/apis/batch.tensorstack.dev/v1beta1/namespaces/{real_ns}/mpijobs/pi-t9k"

    def finished() -> dict[str, Any] | None:
        assert operator.poll() is None, operator.output()[-4000:]
        _, body = real_cluster.request("GET", path)
        status: dict[str, Any] = body.get("status") or {}
        return status if status.get("phase") in ("Succeeded", "Failed") else None

    try:
        status = wait_until(finished, RUN_TIMEOUT, "T9k mpijob pi-t9k finished")
        assert status["phase"] == "Succeeded", status
    except BaseException:
        print(_explain(real_cluster, real_ns))
        raise
    launcher = _launcher_pod(real_cluster, real_ns, "pi-t9k")
    # The init container's image is pinned by digest, and the node found it locally.
    (init,) = launcher["spec"]["initContainers"]
    assert init["image"] == DEFAULT_INIT_IMAGE and "@sha256:" in init["image"]
    (init_status,) = launcher["status"]["initContainerStatuses"]
    assert init_status["state"]["terminated"]["exitCode"] == 0, init_status
    (container,) = launcher["spec"]["containers"]
    command = [*container.get("command", []), *container.get("args", [])]
    expected = ["/usr/bin/mpirun", "--prefix", "/usr", "--hostfile", "/etc/mpi/hostfile"]
    assert command[: len(expected)] == expected, command
    assert command[-4:] == ["--allow-run-as-root", "-np", "2", "/home/mpiuser/pi"], command
    log = _launcher_log(real_cluster, real_ns, "pi-t9k")
    tag = r"\[1,0\]<stdout>:" if stack == "openmpi4" else "^"
    assert re.search(tag + r"pi is approximately 3\.14\d+ \(2 ranks", log, re.M), log
    workers = ["pi-t9k-worker-0", "pi-t9k-worker-1"]
    assert_placement(real_cluster, real_ns, "pi-t9k", log, hosts=workers, slots=1)


#: The PIDs, inside a worker's container, of the processes of an MPI rank (the wrapper's
#: sleep, or pi itself).
RANK_PIDS = (
    'for p in /proc/[0-9]*; do c=$(tr "\\0" " " < $p/cmdline 2>/dev/null); '
    'case "$c" in *"sleep 8"*|*/home/mpiuser/pi*) echo ${p#/proc/};; esac; done'
)


def _rank_pids(cluster: LocalCluster, ns: str, pod: str) -> set[int]:
    out = cluster.kubectl("exec", "-n", ns, pod, "--", "sh", "-c", RANK_PIDS).stdout
    return {int(line) for line in out.split()}


def _uid(cluster: LocalCluster, ns: str, pod: str) -> str | None:
    status, obj = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/{pod}")
    return str(obj["metadata"]["uid"]) if status == 200 else None


def test_restart_failed_replaces_only_the_killed_worker_and_runs_pi_again(
    real_cluster: LocalCluster, real_ns: str, operator: OperatorProcess
) -> None:
    name = "pi-replace"
    apply(real_cluster, real_ns, on_real_node(_killable_pi(name, "RestartFailed")))
    healthy, killed = f"{name}-worker-0", f"{name}-worker-1"

    def both_ranks_started() -> bool:
        assert operator.poll() is None, operator.output()[-4000:]
        return _launcher_log(real_cluster, real_ns, name).count("rank started on") == 2

    try:
        wait_until(both_ranks_started, RUN_TIMEOUT, f"{name}'s ranks started on both workers")
        uids = {pod: _uid(real_cluster, real_ns, pod) for pod in (healthy, killed)}
        old_ranks = _rank_pids(real_cluster, real_ns, healthy)
        assert old_ranks, "no rank process found on the healthy worker"
        status, worker = real_cluster.request("GET", f"/api/v1/namespaces/{real_ns}/pods/{killed}")
        assert status == 200, worker
        os.kill(_container_pid(real_cluster, worker), signal.SIGKILL)

        def replaced() -> bool:
            new = _uid(real_cluster, real_ns, killed)
            return new is not None and new != uids[killed]

        wait_until(replaced, RUN_TIMEOUT, f"{killed} made anew")
        # The healthy worker kept running, and no rank of the first run is left on it.
        assert _uid(real_cluster, real_ns, healthy) == uids[healthy]
        wait_until(
            lambda: not old_ranks & _rank_pids(real_cluster, real_ns, healthy),
            60,
            "the first run's ranks on the healthy worker to be gone",
        )
        done = wait_for_condition(
            real_cluster, real_ns, name, "Succeeded", operator, timeout=RUN_TIMEOUT
        )
    except BaseException:
        print(_explain(real_cluster, real_ns))
        raise
    status = done["status"]
    assert status["restartCount"] == 1, status
    assert status["lastFailure"]["pod"] == killed, status
    log = _launcher_log(real_cluster, real_ns, name)
    assert PI_RESULT.search(log), log
    assert log.count("rank started on") == 2, log
    assert_placement(real_cluster, real_ns, name, log, hosts=[healthy, killed], slots=1)
    events = real_cluster.kubectl("get", "events", "-n", real_ns).stdout
    assert "MPIJobRestartingFailed" in events, events
