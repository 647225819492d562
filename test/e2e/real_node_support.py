"""What the real-node tests (test_real_node*.py) share: running a Kubeflow MPIJob on
the real node to Succeeded and reading its launcher's log, the images' root and
``mpiuser`` layouts, and the checks of the data-parallel example's output."""

from __future__ import annotations

import importlib.util
import itertools
import re
import shlex
import subprocess
from typing import Any

from examples_support import EXAMPLES, apply, items, wait_for_condition

from devcluster import LocalCluster
from devcluster.sample_jobs import on_real_node
from devcluster.testing import OperatorProcess

PI_RESULT = re.compile(r"pi is approximately 3\.14\d+ \(2 ranks")
#: A cold container start on a loaded 2-core machine, then 10^8 samples.
RUN_TIMEOUT = 240.0
#: The examples' pi program for each stack of the real node's images.
STACK_EXAMPLES = {
    "openmpi": "pi.yaml",
    "openmpi4": "pi.yaml",
    "mpich": "pi-mpich.yaml",
    "intel": "pi-intel.yaml",
}
#: Printed by the launcher between two programs of one job (:func:`then_sgd`).
NEXT_PROGRAM = "=== next program: sgd.py ==="

Obj = dict[str, Any]


def launcher_pod(cluster: LocalCluster, ns: str, job: str) -> Obj:
    pods = [
        p
        for p in items(cluster, f"/api/v1/namespaces/{ns}/pods")
        if p["metadata"]["name"].startswith(f"{job}-launcher")
    ]
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    return pods[0]


def launcher_log(cluster: LocalCluster, ns: str, job: str) -> str:
    pod = launcher_pod(cluster, ns, job)["metadata"]["name"]
    return str(cluster.kubectl("logs", "-n", ns, pod).stdout)


def explain(cluster: LocalCluster, ns: str) -> str:
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


def run_kubeflow(
    cluster: LocalCluster, ns: str, job: Obj, proc: OperatorProcess
) -> tuple[Obj, str]:
    """Applies the job on the real node, waits for Succeeded, returns it and the launcher's
    log."""
    apply(cluster, ns, on_real_node(job))
    name = job["metadata"]["name"]
    try:
        done = wait_for_condition(cluster, ns, name, "Succeeded", proc, timeout=RUN_TIMEOUT)
    except BaseException:
        print(explain(cluster, ns))
        raise
    return done, launcher_log(cluster, ns, name)


def as_root(job: Obj) -> Obj:
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


def with_image(job: Obj, image: str) -> Obj:
    for spec in job["spec"]["mpiReplicaSpecs"].values():
        for container in spec["template"]["spec"]["containers"]:
            container["image"] = image
    return job


def launcher_container(job: Obj) -> Obj:
    pod = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    container: Obj = pod["containers"][0]
    return container


def launcher_argv(job: Obj) -> list[str]:
    """The launcher's command line: ``mpirun ... PROGRAM`` (pi.yaml's command and args,
    or pi-mpich.yaml's and pi-intel.yaml's args alone)."""
    container = launcher_container(job)
    return [*container.get("command", []), *container.get("args", [])]


def set_launcher_argv(job: Obj, argv: list[str]) -> None:
    """Sets the launcher's command line the way the example gives it: as command and
    args, or as args alone (the Intel image's entry point then runs them)."""
    container = launcher_container(job)
    if "command" in container:
        container["command"], container["args"] = argv[:1], argv[1:]
    else:
        container["args"] = argv


def then_sgd(job: Obj) -> None:
    """The launcher runs its program, then the data-parallel example with the same
    mpirun arguments: one job, two programs, the log split by :data:`NEXT_PROGRAM`."""
    argv = launcher_argv(job)
    sgd = [*argv[:-1], "python3", "/home/mpiuser/sgd.py"]
    script = f"{shlex.join(argv)} && echo {shlex.quote(NEXT_PROGRAM)} && {shlex.join(sgd)}"
    set_launcher_argv(job, ["sh", "-c", script])


def sgd_module() -> Any:
    """examples/v2beta1/mpi4py-sgd/sgd.py, imported (numpy only; mpi4py only in main)."""
    path = EXAMPLES / "mpi4py-sgd" / "sgd.py"
    spec = importlib.util.spec_from_file_location("sgd_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_sgd_trained(log: str, ranks: int) -> None:
    """sgd.py's output: the loss fell every epoch, and the weights every rank holds are a
    single process's weights on all the rows."""
    losses = [float(v) for v in re.findall(r"^epoch \d+ loss (\S+)$", log, re.M)]
    sgd = sgd_module()
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
    checksum = re.search(rf"weights checksum (\S+) \({ranks} ranks\)", log)
    assert checksum and abs(float(checksum[1]) - sgd.checksum(single)) < 1e-8, log
    spread = re.search(r"largest weight difference between ranks (\S+)", log)
    assert spread and float(spread[1]) < 1e-12, log


def container_pid(cluster: LocalCluster, pod: Obj) -> int:
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
