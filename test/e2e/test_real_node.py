"""MPI programs run for real: the operator's MPIJobs on the ``real`` shape's node, whose
containers come from the images of ``hack/build-node-images.sh`` (examples/v2beta1/pi's
program on Open MPI 5, the default ``openmpi`` tag, here; every stack in
test_real_node_stacks.py): workers killed and restarted, ``runLauncherAsWorker``,
``WaitForWorkersReady`` and T9k's generated mpirun line. Each test checks what the
launcher printed, which only a run that went through everything shows: the SSH key
Secret mounted with working modes, sshd in the workers, the hostfile's names resolved
by CoreDNS from the headless Service, mpirun reaching every worker, and each rank on
the host the hostfile gives it (placement_support)."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from examples_support import (
    EXAMPLES,
    apply,
    condition,
    docs,
    items,
    mpijob,
    wait_for_condition,
)
from placement_support import assert_placement, kubeflow_hosts
from real_node_support import (
    PI_RESULT,
    RUN_TIMEOUT,
    container_pid,
    explain,
    launcher_log,
    launcher_pod,
    run_kubeflow,
)

from devcluster import LocalCluster
from devcluster.crds import crds_installed
from devcluster.demo_job import load_mpijob
from devcluster.nodeconfig import MPI_IMAGES, T9K_INIT_IMAGE
from devcluster.sample_jobs import on_real_node
from devcluster.testing import OperatorProcess, wait_until
from mpi_operator.builders.t9k.pods import DEFAULT_INIT_IMAGE

ROOT = Path(__file__).resolve().parents[2]
T9K_CRD = ROOT / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"
T9K_PI = ROOT / "examples" / "t9k" / "pi.yaml"

Obj = dict[str, Any]


#: Each rank says it started, then waits before computing: long enough for the test to
#: kill a worker while the job's MPI processes run there.
RANK_WRAPPER = "echo rank started on $(cat /etc/hostname); sleep 8; exec /home/mpiuser/pi"
#: The launcher prints mpirun's output line by line and succeeds only if pi was printed.
#: Open MPI 5's prterun has exited 0 after "PRTE has lost communication with a remote
#: daemon" (a worker killed, on a loaded machine): the job then Succeeded with no
#: restart, as it must when the launcher succeeds, and the kill was not tested.
LAUNCHER_GUARD = (
    'mpirun "$@" 2>&1 | { ok=1; while IFS= read -r line; do printf "%s\\n" "$line"; '
    'case "$line" in *"pi is approximately"*) ok=0;; esac; done; exit $ok; }'
)


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
    launcher["command"] = ["sh", "-c", LAUNCHER_GUARD, "mpirun"]
    launcher["args"] = ["-n", "2", "sh", "-c", RANK_WRAPPER]
    # The project's Open MPI 5 image, on which these kills were proven; the examples'
    # public image runs as written in test_examples.py.
    for spec in job["spec"]["mpiReplicaSpecs"].values():
        for container in spec["template"]["spec"]["containers"]:
            container["image"] = MPI_IMAGES["openmpi"]
    return job


def test_the_bridge_keeps_the_mac_it_was_given(real_cluster: LocalCluster) -> None:
    """Set when the node starts (``set`` to the kernel), so a pod's veth that goes does not
    change the gateway's MAC under the pods that cached it (their DNS would go quiet)."""
    assert real_cluster.node is not None
    layout = real_cluster.node.layout
    link = Path("/sys/class/net") / layout.bridge
    assert (link / "address").read_text().strip() == layout.bridge_mac
    assert (link / "addr_assign_type").read_text().strip() == "3"  # NET_ADDR_SET


def test_a_worker_killed_for_real_restarts_the_job_which_then_computes_pi(
    real_cluster: LocalCluster, real_ns: str, operator: OperatorProcess
) -> None:
    name = "pi-killed"
    apply(real_cluster, real_ns, on_real_node(_killable_pi(name, "RestartJob")))
    worker_path = f"/api/v1/namespaces/{real_ns}/pods/{name}-worker-1"

    def both_ranks_started() -> bool:
        assert operator.poll() is None, operator.output()[-4000:]
        return launcher_log(real_cluster, real_ns, name).count("rank started on") == 2

    try:
        wait_until(both_ranks_started, RUN_TIMEOUT, f"{name}'s ranks started on both workers")
        status, worker = real_cluster.request("GET", worker_path)
        assert status == 200, worker
        # The worker's sshd, PID 1 of its container, with the rank's processes under it.
        os.kill(container_pid(real_cluster, worker), signal.SIGKILL)
        done = wait_for_condition(
            real_cluster, real_ns, name, "Succeeded", operator, timeout=RUN_TIMEOUT
        )
    except BaseException:
        print(explain(real_cluster, real_ns))
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
    log = launcher_log(real_cluster, real_ns, name)
    assert PI_RESULT.search(log), log
    assert log.count("rank started on") == 2, log
    assert_placement(
        real_cluster, real_ns, name, log, hosts=[f"{name}-worker-{i}" for i in (0, 1)], slots=1
    )
    launcher_job = real_cluster.request(
        "GET", f"/apis/batch/v1/namespaces/{real_ns}/jobs/{name}-launcher"
    )[1]
    assert launcher_job["metadata"]["labels"]["training.kubeflow.org/restart-attempt"] == "1"


def test_run_launcher_as_worker_puts_a_rank_on_the_launcher(
    real_cluster: LocalCluster, real_ns: str, operator: OperatorProcess
) -> None:
    job = load_mpijob(EXAMPLES / "pi" / "pi.yaml")
    job["metadata"]["name"] = "pi-law"
    job["spec"]["runLauncherAsWorker"] = True
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["args"] = ["-n", "3", "/home/mpiuser/pi"]
    _, log = run_kubeflow(real_cluster, real_ns, job, operator)
    assert re.search(r"pi is approximately 3\.14\d+ \(3 ranks", log), log
    hosts, slots = kubeflow_hosts(job)
    assert hosts == ["pi-law-launcher", "pi-law-worker-0", "pi-law-worker-1"], hosts
    assert_placement(real_cluster, real_ns, "pi-law", log, hosts=hosts, slots=slots)


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
    _, log = run_kubeflow(real_cluster, real_ns, job, operator)
    assert PI_RESULT.search(log), log
    hosts, slots = kubeflow_hosts(job)
    assert_placement(real_cluster, real_ns, "pi-wait", log, hosts=hosts, slots=slots)
    launcher = launcher_pod(real_cluster, real_ns, "pi-wait")
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
    assert job["spec"]["mpiHome"] == "/usr"  # as written: the image's Open MPI
    # orte_tag_output shows that the mca reached mpirun.
    job["spec"]["mca"]["orte_tag_output"] = "1"
    template = job["spec"]["worker"]["template"]
    template["spec"]["containers"][0]["image"] = MPI_IMAGES[stack]
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
        print(explain(real_cluster, real_ns))
        raise
    launcher = launcher_pod(real_cluster, real_ns, "pi-t9k")
    # The init container's image is --t9k-init-image's, which the node has.
    (init,) = launcher["spec"]["initContainers"]
    assert init["image"] == T9K_INIT_IMAGE != DEFAULT_INIT_IMAGE
    (init_status,) = launcher["status"]["initContainerStatuses"]
    assert init_status["state"]["terminated"]["exitCode"] == 0, init_status
    (container,) = launcher["spec"]["containers"]
    command = [*container.get("command", []), *container.get("args", [])]
    expected = ["/usr/bin/mpirun", "--prefix", "/usr", "--hostfile", "/etc/mpi/hostfile"]
    assert command[: len(expected)] == expected, command
    assert command[-4:] == ["--allow-run-as-root", "-np", "2", "/home/mpiuser/pi"], command
    log = launcher_log(real_cluster, real_ns, "pi-t9k")
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
        return launcher_log(real_cluster, real_ns, name).count("rank started on") == 2

    try:
        wait_until(both_ranks_started, RUN_TIMEOUT, f"{name}'s ranks started on both workers")
        uids = {pod: _uid(real_cluster, real_ns, pod) for pod in (healthy, killed)}
        old_ranks = _rank_pids(real_cluster, real_ns, healthy)
        assert old_ranks, "no rank process found on the healthy worker"
        status, worker = real_cluster.request("GET", f"/api/v1/namespaces/{real_ns}/pods/{killed}")
        assert status == 200, worker
        os.kill(container_pid(real_cluster, worker), signal.SIGKILL)

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
        print(explain(real_cluster, real_ns))
        raise
    status = done["status"]
    assert status["restartCount"] == 1, status
    assert status["lastFailure"]["pod"] == killed, status
    log = launcher_log(real_cluster, real_ns, name)
    assert PI_RESULT.search(log), log
    assert log.count("rank started on") == 2, log
    assert_placement(real_cluster, real_ns, name, log, hosts=[healthy, killed], slots=1)
    events = real_cluster.kubectl("get", "events", "-n", real_ns).stdout
    assert "MPIJobRestartingFailed" in events, events


def _running_launcher_ranks(cluster: LocalCluster, ns: str, job: str, seen: set[str]) -> int:
    """How many ranks the job's running launcher pod (one not in ``seen``) says started;
    0 while there is none (a restart replacing it, say)."""
    pods = [
        p
        for p in items(cluster, f"/api/v1/namespaces/{ns}/pods")
        if p["metadata"]["name"].startswith(f"{job}-launcher")
        and p["metadata"]["name"] not in seen
        and not p["metadata"].get("deletionTimestamp")
        and p["status"].get("phase") == "Running"
    ]
    if len(pods) != 1:
        return 0
    log = cluster.kubectl("logs", "-n", ns, pods[0]["metadata"]["name"], check=False).stdout
    if str(log).count("rank started on") < 2:
        return 0
    seen.add(pods[0]["metadata"]["name"])
    return 2


def test_restart_failed_past_max_restarts_fails_the_job_naming_the_pod(
    real_cluster: LocalCluster, real_ns: str, operator: OperatorProcess
) -> None:
    """maxRestarts 1: the first kill replaces the worker and the launcher; the second,
    of the replacement while the new mpirun runs, fails the job, naming that pod."""
    name = "pi-exhausted"
    apply(real_cluster, real_ns, on_real_node(_killable_pi(name, "RestartFailed")))
    killed = f"{name}-worker-1"
    launchers: set[str] = set()
    try:
        for attempt in (0, 1):

            def ranks_started() -> bool:
                assert operator.poll() is None, operator.output()[-4000:]
                return _running_launcher_ranks(real_cluster, real_ns, name, launchers) == 2

            wait_until(ranks_started, RUN_TIMEOUT, f"attempt {attempt}'s ranks on both workers")
            status, worker = real_cluster.request(
                "GET", f"/api/v1/namespaces/{real_ns}/pods/{killed}"
            )
            assert status == 200, worker
            os.kill(container_pid(real_cluster, worker), signal.SIGKILL)

        def failed() -> Obj | None:
            assert operator.poll() is None, operator.output()[-4000:]
            job = mpijob(real_cluster, real_ns, name)
            return job if condition(job, "Failed") == "True" else None

        done = wait_until(failed, RUN_TIMEOUT, f"mpijob {name} Failed")
    except BaseException:
        print(explain(real_cluster, real_ns))
        raise
    status = done["status"]
    assert len(launchers) == 2, launchers
    assert status["restartCount"] == 1, status
    assert status["lastFailure"]["pod"] == killed, status
    (failure,) = [c for c in status["conditions"] if c["type"] == "Failed"]
    assert failure["reason"] == "ReachedMaxRestarts", failure
    assert failure["message"] == (
        f"reached maxRestarts 1 (rule worker-killed): worker {killed} container mpi-worker "
        "terminated: Error (exit 137)"
    ), failure
