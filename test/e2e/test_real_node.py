"""MPI programs run for real: the operator's MPIJobs on the ``real`` shape's node, whose
containers come from the images of ``hack/build-node-images.sh`` (examples/v2beta1/pi's
program on Open MPI 5, the default ``openmpi`` tag, here; every stack in
test_real_node_stacks.py): workers killed and restarted, ``runLauncherAsWorker``,
``WaitForWorkersReady`` and T9k's generated mpirun line. Each test checks what the
launcher printed, which only a run that went through everything shows: the SSH key
Secret mounted with working modes, sshd in the workers, the hostfile's names resolved
by CoreDNS from the headless Service, mpirun reaching every worker, and each rank on
the host the hostfile gives it (placement_support).

The cases run side by side (real_examples_support.cases_running), each in a namespace
of its own under one operator; each test checks what its case kept. A killed worker is
the case's own pod, read from its namespace, its process found by that pod's container
ID."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from functools import partial
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
from real_examples_support import (
    CONCURRENT_RUN_TIMEOUT,
    Case,
    CaseEnv,
    Finished,
    cases_running,
    job_memory,
    keep,
    run_job,
)
from real_node_support import (
    PI_RESULT,
    container_pid,
    launcher_log,
)

from devcluster import LocalCluster
from devcluster.demo import load_mpijob
from devcluster.nodeconfig import MPI_IMAGES, T9K_INIT_IMAGE
from devcluster.sample_jobs import on_real_node
from devcluster.testing import wait_until
from mpi_operator.builders.t9k.pods import DEFAULT_INIT_IMAGE

ROOT = Path(__file__).resolve().parents[2]
T9K_CRD = ROOT / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"
T9K_PI = ROOT / "examples" / "t9k" / "pi.yaml"

Obj = dict[str, Any]


#: Each rank says it started, then waits before computing: long enough for the test to
#: kill a worker while the job's MPI processes run there.
RANK_WRAPPER = "echo rank started on $(cat /etc/hostname); sleep 8; exec /home/mpiuser/pi"


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
    # The project's Open MPI 5 image, on which these kills were proven; the examples'
    # public image runs as written in test_examples.py.
    for spec in job["spec"]["mpiReplicaSpecs"].values():
        for container in spec["template"]["spec"]["containers"]:
            container["image"] = MPI_IMAGES["openmpi"]
    return job


def _kill_worker(env: CaseEnv, pod: str) -> None:
    """SIGKILLs the main process (sshd, PID 1, the rank's processes under it) of the
    container of ``pod``, read from the case's own namespace: its containerd task is
    found by the container ID that pod's status gives, so no other case's pod is hit."""
    status, worker = env.cluster.request("GET", f"/api/v1/namespaces/{env.namespace}/pods/{pod}")
    assert status == 200, worker
    os.kill(container_pid(env.cluster, worker), signal.SIGKILL)


def _wait_both_ranks_started(env: CaseEnv, name: str) -> None:
    def both_ranks_started() -> bool:
        env.check()
        return launcher_log(env.cluster, env.namespace, name).count("rank started on") == 2

    wait_until(
        both_ranks_started, CONCURRENT_RUN_TIMEOUT, f"{name}'s ranks started on both workers"
    )


def _succeeded(env: CaseEnv, name: str) -> Obj:
    return wait_for_condition(
        env.cluster,
        env.namespace,
        name,
        "Succeeded",
        env.operator,
        timeout=CONCURRENT_RUN_TIMEOUT,
        each_poll=env.check,
    )


def _run_killed(env: CaseEnv) -> Finished:
    cluster, ns, name = env.cluster, env.namespace, "pi-killed"
    apply(cluster, ns, on_real_node(_killable_pi(name, "RestartJob")))
    _wait_both_ranks_started(env, name)
    _kill_worker(env, f"{name}-worker-1")
    done = _succeeded(env, name)
    _, launcher_job = cluster.request("GET", f"/apis/batch/v1/namespaces/{ns}/jobs/{name}-launcher")
    return keep(cluster, ns, done, launcher_job=launcher_job)


def _law_job() -> Obj:
    job = load_mpijob(EXAMPLES / "pi" / "pi.yaml")
    job["metadata"]["name"] = "pi-law"
    job["spec"]["runLauncherAsWorker"] = True
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["args"] = ["-n", "3", "/home/mpiuser/pi"]
    return job


def _wait_job() -> Obj:
    job = load_mpijob(EXAMPLES / "pi" / "pi.yaml")
    job["metadata"]["name"] = "pi-wait"
    job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    job["spec"]["runPolicy"]["cleanPodPolicy"] = "None"
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    # Ready only once sshd listens, a few seconds after the container started.
    worker["readinessProbe"] = {"tcpSocket": {"port": 2222}, "initialDelaySeconds": 3}
    return job


def _run_wait(env: CaseEnv) -> Finished:
    finished = run_job(_wait_job(), env)
    for i in (0, 1):
        path = f"/api/v1/namespaces/{env.namespace}/pods/pi-wait-worker-{i}"
        status, pod = env.cluster.request("GET", path)
        assert status == 200, pod
        finished.seen[f"worker-{i}"] = pod
    return finished


def _t9k_job(stack: str) -> Obj:
    (job,) = docs(T9K_PI)
    assert job["spec"]["mpiHome"] == "/usr"  # as written: the image's Open MPI
    # orte_tag_output shows that the mca reached mpirun.
    job["spec"]["mca"]["orte_tag_output"] = "1"
    template = job["spec"]["worker"]["template"]
    template["spec"]["containers"][0]["image"] = MPI_IMAGES[stack]
    return job


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


def _run_replace(env: CaseEnv) -> Finished:
    cluster, ns, name = env.cluster, env.namespace, "pi-replace"
    apply(cluster, ns, on_real_node(_killable_pi(name, "RestartFailed")))
    healthy, killed = f"{name}-worker-0", f"{name}-worker-1"
    _wait_both_ranks_started(env, name)
    uids = {pod: _uid(cluster, ns, pod) for pod in (healthy, killed)}
    old_ranks = _rank_pids(cluster, ns, healthy)
    assert old_ranks, "no rank process found on the healthy worker"
    _kill_worker(env, killed)

    def replaced() -> bool:
        env.check()
        new = _uid(cluster, ns, killed)
        return new is not None and new != uids[killed]

    wait_until(replaced, CONCURRENT_RUN_TIMEOUT, f"{killed} made anew")
    # The healthy worker kept running, and no rank of the first run is left on it.
    healthy_uid = _uid(cluster, ns, healthy)

    def old_ranks_gone() -> bool:
        env.check()
        return not old_ranks & _rank_pids(cluster, ns, healthy)

    wait_until(old_ranks_gone, 60, "the first run's ranks on the healthy worker to be gone")
    done = _succeeded(env, name)
    events = cluster.kubectl("get", "events", "-n", ns).stdout
    return keep(
        cluster,
        ns,
        done,
        healthy_uids=(uids[healthy], healthy_uid),
        events=events,
    )


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


def _run_exhausted(env: CaseEnv) -> tuple[Obj, set[str]]:
    """maxRestarts 1: the first kill replaces the worker and the launcher; the second,
    of the replacement while the new mpirun runs, fails the job, naming that pod."""
    cluster, ns, name = env.cluster, env.namespace, "pi-exhausted"
    apply(cluster, ns, on_real_node(_killable_pi(name, "RestartFailed")))
    killed = f"{name}-worker-1"
    launchers: set[str] = set()
    for attempt in (0, 1):

        def ranks_started() -> bool:
            env.check()
            return _running_launcher_ranks(cluster, ns, name, launchers) == 2

        wait_until(
            ranks_started, CONCURRENT_RUN_TIMEOUT, f"attempt {attempt}'s ranks on both workers"
        )
        _kill_worker(env, killed)

    def failed() -> Obj | None:
        env.check()
        job = mpijob(cluster, ns, name)
        return job if condition(job, "Failed") == "True" else None

    done: Obj = wait_until(failed, CONCURRENT_RUN_TIMEOUT, f"mpijob {name} Failed")
    return done, launchers


T9K_STACKS = ["openmpi", "openmpi4"]


def _cases() -> dict[str, Case[Any]]:
    law, wait = _law_job(), _wait_job()
    t9k = {stack: _t9k_job(stack) for stack in T9K_STACKS}
    killable = job_memory(_killable_pi("pi", "RestartJob"))
    cases: list[Case[Any]] = [
        Case("worker-killed", _run_killed, killable),
        Case("restart-failed", _run_replace, killable),
        Case("restart-failed-past-max-restarts", _run_exhausted, killable),
        Case("run-launcher-as-worker", partial(run_job, law), job_memory(law)),
        # cleanPodPolicy None: its workers stay (their Ready times are read once it ended).
        Case("wait-for-workers-ready", _run_wait, job_memory(wait), pods_stay=True),
        *(Case(f"t9k-{s}", partial(run_job, job), job_memory(job)) for s, job in t9k.items()),
    ]
    return {case.id: case for case in cases}


#: One test's wait for its case: its own deadlines (up to four waits for the killed
#: workers' cases, then 60 s for its pods to go), behind at most the six other cases.
CASE_WAIT = (4 * CONCURRENT_RUN_TIMEOUT + 60) * 7


@pytest.fixture(scope="module")
def runs(
    real_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Case[Any]]]:
    """Every case of this module running at once on the real node, a namespace each,
    one operator watching them all (T9k's CRD installed first), started by the first
    test that asks; each test waits for its own case and checks what it kept."""
    cases = _cases()
    with cases_running(
        real_cluster, list(cases.values()), tmp_path_factory.mktemp("real-node"), crds=[T9K_CRD]
    ):
        yield cases


def test_a_worker_killed_for_real_restarts_the_job_which_then_computes_pi(
    real_cluster: LocalCluster, runs: dict[str, Case[Finished]]
) -> None:
    case, name = runs["worker-killed"], "pi-killed"
    run = case.result(CASE_WAIT)
    status = run.job["status"]
    assert status["restartCount"] == 1, status
    failure = status["lastFailure"]
    assert failure["pod"] == f"{name}-worker-1", failure
    assert failure["exitCode"] == 137, failure
    assert failure["message"] == (
        f"worker {name}-worker-1 container mpi-worker terminated: Error (exit 137)"
    ), failure
    # The launcher of the second run computed pi on the new workers.
    log = run.log
    assert PI_RESULT.search(log), log
    assert log.count("rank started on") == 2, log
    assert_placement(
        real_cluster,
        case.namespace,
        name,
        log,
        hosts=[f"{name}-worker-{i}" for i in (0, 1)],
        slots=1,
        hostfile=run.hostfile,
    )
    launcher_job = run.seen["launcher_job"]
    assert launcher_job["metadata"]["labels"]["training.kubeflow.org/restart-attempt"] == "1"


def test_run_launcher_as_worker_puts_a_rank_on_the_launcher(
    real_cluster: LocalCluster, runs: dict[str, Case[Finished]]
) -> None:
    case = runs["run-launcher-as-worker"]
    run = case.result(CASE_WAIT)
    log = run.log
    assert re.search(r"pi is approximately 3\.14\d+ \(3 ranks", log), log
    hosts, slots = kubeflow_hosts(_law_job())
    assert hosts == ["pi-law-launcher", "pi-law-worker-0", "pi-law-worker-1"], hosts
    assert_placement(
        real_cluster, case.namespace, "pi-law", log, hosts=hosts, slots=slots, hostfile=run.hostfile
    )


def _ready_since(pod: Obj) -> str:
    for c in pod["status"].get("conditions") or []:
        if c["type"] == "Ready" and c["status"] == "True":
            return str(c["lastTransitionTime"])
    raise AssertionError(f"{pod['metadata']['name']} is not Ready: {pod['status']}")


def test_wait_for_workers_ready_creates_the_launcher_after_sshd_is_ready(
    real_cluster: LocalCluster, runs: dict[str, Case[Finished]]
) -> None:
    case = runs["wait-for-workers-ready"]
    run = case.result(CASE_WAIT)
    log = run.log
    assert PI_RESULT.search(log), log
    hosts, slots = kubeflow_hosts(_wait_job())
    assert_placement(
        real_cluster,
        case.namespace,
        "pi-wait",
        log,
        hosts=hosts,
        slots=slots,
        hostfile=run.hostfile,
    )
    created = run.launcher["metadata"]["creationTimestamp"]
    for i in (0, 1):
        pod = run.seen[f"worker-{i}"]
        # RFC 3339 UTC timestamps of one format compare as strings.
        assert _ready_since(pod) <= created, (pod["status"], created)


@pytest.mark.parametrize("stack", T9K_STACKS)
def test_t9k_generated_mpirun_line_runs_the_program(
    real_cluster: LocalCluster, runs: dict[str, Case[Finished]], stack: str
) -> None:
    """The line runs on Open MPI 5 and 4.1. Its hostfile is an explicit --hostfile, which
    both read. Its `--mca orte_*` names mean something only to Open MPI 4 (ORTE): under
    Open MPI 5 they reach the ranks' environment only, so only 4.1 tags the output. (Open
    MPI 5 still reaches the workers by the hostfile's full names: PRRTE's ssh launcher
    uses a host's name as the hostfile gives it.)"""
    case = runs[f"t9k-{stack}"]
    run = case.result(CASE_WAIT)
    launcher = run.launcher
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
    log = run.log
    tag = r"\[1,0\]<stdout>:" if stack == "openmpi4" else "^"
    assert re.search(tag + r"pi is approximately 3\.14\d+ \(2 ranks", log, re.M), log
    workers = ["pi-t9k-worker-0", "pi-t9k-worker-1"]
    assert_placement(
        real_cluster, case.namespace, "pi-t9k", log, hosts=workers, slots=1, hostfile=run.hostfile
    )


def test_restart_failed_replaces_only_the_killed_worker_and_runs_pi_again(
    real_cluster: LocalCluster, runs: dict[str, Case[Finished]]
) -> None:
    case, name = runs["restart-failed"], "pi-replace"
    healthy, killed = f"{name}-worker-0", f"{name}-worker-1"
    run = case.result(CASE_WAIT)
    # The healthy worker kept running (its pod the same once the killed one was made anew).
    before, after = run.seen["healthy_uids"]
    assert after == before
    status = run.job["status"]
    assert status["restartCount"] == 1, status
    assert status["lastFailure"]["pod"] == killed, status
    log = run.log
    assert PI_RESULT.search(log), log
    assert log.count("rank started on") == 2, log
    assert_placement(
        real_cluster,
        case.namespace,
        name,
        log,
        hosts=[healthy, killed],
        slots=1,
        hostfile=run.hostfile,
    )
    events = run.seen["events"]
    assert "MPIJobRestartingFailed" in events, events


def test_restart_failed_past_max_restarts_fails_the_job_naming_the_pod(
    runs: dict[str, Case[tuple[Obj, set[str]]]],
) -> None:
    """maxRestarts 1: the first kill replaces the worker and the launcher; the second,
    of the replacement while the new mpirun runs, fails the job, naming that pod."""
    killed = "pi-exhausted-worker-1"
    done, launchers = runs["restart-failed-past-max-restarts"].result(CASE_WAIT)
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
