"""Where the failure policy meets gang scheduling, on the full shape's KWOK nodes: every
case of {RestartJob, RestartFailed} x {no gang scheduling, Volcano PodGroups, the
Workload API} x {a worker fails (exit 1), a worker is evicted, the launcher fails}.

Each case runs one MPIJob (two workers, a launcher, ``failurePolicy`` with one rule of
the action and ``maxRestarts`` 1, ``cleanPodPolicy: Running``) in a namespace of its own
and ends as beyond-the-reference.md documents: the failure restarts the job once
(one ``MPIJobRestarting`` event for RestartJob, one ``MPIJobRestartingFailed`` for
RestartFailed), ``restartCount`` is 1, the job is Running again on new pods (RestartJob:
every worker and the launcher; RestartFailed: the failed pod and the launcher, the
healthy workers keeping their uids), and once KWOK completes the new launcher's pod
(exit 0) it Succeeds with no pod left Pending or Running. Deleted, the MPIJob leaves no
pod and no PodGroup behind. KWOK fails, evicts and completes the pods (annotations its
stages in devcluster/stages/ read), the Job controller runs the launcher Job.

Placement: without gang scheduling and with the Workload API, the real kube-scheduler
(its gang plugin for the latter); Volcano does not run here, so its pods (scheduler
``volcano``) are bound by the test (``kwok_support.fake_gang_scheduler``) only while
the PodGroup's ``minMember`` of them exist, as Volcano's gang plugin would: a restart
that holds back a pod of the quorum never gets placed.

Speed: one cluster; one in-process operator per gang mode, watching its six
namespaces; all eighteen cases run at once on the module's event loop, started by the
first test, and each test waits for and checks its own case (its failure says which
step of the case did not happen).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio
from controller_harness import Cluster, mpijob
from harness import api_client, controllers
from kwok_support import (
    attempt,
    delete_job_and_wait,
    fake_gang_scheduler,
    hold,
    kwok_complete,
    kwok_evict,
    kwok_fail,
    launcher_pods,
    live,
    phase,
    release,
    running_again,
    wait_launcher_pod,
    wait_phase,
)

from devcluster.polling import eventually
from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.client import PODS, Resource
from mpi_operator.client.kubeapi import POD_GROUPS_VOLCANO, POD_GROUPS_WORKLOAD_API
from mpi_operator.controller.kubeflow.controller import MPIJobController

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
ACTIONS = ("RestartJob", "RestartFailed")
GANGS = ("none", "volcano", "workload-api")
FAILURES = ("worker-fails", "worker-evicted", "launcher-fails")
CASES = list(itertools.product(ACTIONS, GANGS, FAILURES))
EVENT = {"RestartJob": "MPIJobRestarting", "RestartFailed": "MPIJobRestartingFailed"}
GROUPS: dict[str, Resource | None] = {
    "none": None,
    "volcano": POD_GROUPS_VOLCANO,
    "workload-api": POD_GROUPS_WORKLOAD_API,
}
CASE_SECONDS = 150  # one case's deadline, all eighteen running together
VOLCANO_NODE = "kwok-node-0"


def _gang(mode: str) -> GangScheduling | None:
    if mode == "volcano":
        return GangScheduling.volcano()
    if mode == "workload-api":
        return GangScheduling.workload_api()
    return None


def _job(action: str) -> Obj:
    policy = {"maxRestarts": 1, "rules": [{"name": "any", "action": action}]}
    container = {"name": "main", "image": "mpi-pi:latest"}
    # restartPolicy Never, as the guide advises: a failed mpirun's pod reaches phase
    # Failed at once (OnFailure would restart its container in place).
    launcher = {"spec": {"restartPolicy": "Never", "containers": [container]}}
    return mpijob(
        workers=2,
        launcher_template=launcher,
        runPolicy={"cleanPodPolicy": "Running", "failurePolicy": policy},
    )


@dataclass
class Case:
    action: str
    gang: str
    failure: str
    cluster: Cluster
    steps: list[str] = field(default_factory=list)
    seconds: float = 0.0
    started: float = field(default_factory=time.monotonic)

    def step(self, what: str) -> None:
        """Records the step begun (and when: seconds since the case started)."""
        self.steps.append(f"{time.monotonic() - self.started:.1f}s {what}")

    async def wait(
        self, check: Callable[[], Awaitable[bool]], what: str, within: float = 60
    ) -> None:
        self.step(what)
        await eventually(check, within=within, interval=0.25, what=f"{self}: {what}")

    def __str__(self) -> str:
        return f"{self.action}/{self.gang}/{self.failure} in {self.cluster.ns}"


async def run_case(case: Case) -> None:
    """One case, start to end; raises AssertionError naming the step that failed."""
    case.started = time.monotonic()
    cluster = case.cluster
    await cluster.create(_job(case.action))
    await case.wait(lambda: _condition(cluster, "Running"), "first run Running")
    first_workers = {w["metadata"]["name"]: w for w in live(await cluster.workers())}
    assert set(first_workers) == {"job-worker-0", "job-worker-1"}, (str(case), first_workers)
    first_launcher_pod = await wait_launcher_pod(cluster, None)
    group = GROUPS[case.gang]
    if group is not None:
        (pod_group,) = await cluster.list(group)
        assert pod_group["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"

    # The failure.
    case.step("failure")
    failed = (
        first_launcher_pod if case.failure == "launcher-fails" else first_workers["job-worker-1"]
    )
    # Held by the test's finalizer until its failure is seen: the operator may replace a
    # failed worker (same name) before a poll sees the phase.
    await hold(cluster, failed["metadata"]["name"])
    try:
        if case.failure == "worker-evicted":
            await kwok_evict(cluster, failed)
        else:
            await kwok_fail(cluster, failed)
        got = await wait_phase(cluster, failed["metadata"]["name"], "Failed")
    finally:
        await release(cluster, failed["metadata"]["name"])
    if case.failure == "worker-evicted":
        assert got["status"].get("reason") == "Evicted", (str(case), got["status"])

    # The restart, and the job running again.
    await case.wait(lambda: _event(cluster, EVENT[case.action]), "the restart's event")
    await case.wait(lambda: running_again(cluster), "Running again, restartCount 1")
    case.step("the new launcher pod Running")
    new_launcher_pod = await wait_launcher_pod(cluster, "1")
    assert new_launcher_pod["spec"].get("nodeName"), (str(case), "new launcher pod unbound")
    await case.wait(lambda: _workers_running(cluster), "both workers Running")
    workers = {w["metadata"]["name"]: w for w in live(await cluster.workers())}
    for name, worker in workers.items():
        first = first_workers[name]
        replaced = case.action == "RestartJob" or (
            case.failure != "launcher-fails" and name == "job-worker-1"
        )
        if replaced:
            assert worker["metadata"]["uid"] != first["metadata"]["uid"], (str(case), name)
            assert attempt(worker) == "1", (str(case), name)
        else:
            assert worker["metadata"]["uid"] == first["metadata"]["uid"], (str(case), name)
            assert attempt(worker) is None, (str(case), name)
    if group is not None:
        (same_group,) = await cluster.list(group)
        assert same_group["metadata"]["uid"] == pod_group["metadata"]["uid"], str(case)

    # Success.
    case.step("the new launcher pod completes")
    await kwok_complete(cluster, new_launcher_pod)
    await case.wait(lambda: _condition(cluster, "Succeeded"), "Succeeded")
    await case.wait(lambda: _nothing_running(cluster), "no pod Pending or Running", within=30)
    status = (await cluster.job())["status"]
    assert status["restartCount"] == 1, (str(case), status)
    reasons = [e[1] for e in await cluster.events()]
    assert reasons.count(EVENT[case.action]) == 1, (str(case), reasons)
    assert not {"MPIJobFailed", "MPIJobEvicted"} & set(reasons), (str(case), reasons)

    # Deleted: nothing left behind.
    case.step("the MPIJob deleted")
    await delete_job_and_wait(cluster)
    await case.wait(lambda: _no_pods(cluster), "no pod left", within=30)
    if group is not None:
        await _no_pod_group_left(case, group)
    case.seconds = time.monotonic() - case.started


async def _no_pod_group_left(case: Case, group: Resource) -> None:
    cluster = case.cluster

    async def gone() -> bool:
        return await cluster.list(group) == []

    await case.wait(gone, "no PodGroup left", within=30)


async def _condition(cluster: Cluster, kind: str) -> bool:
    return (await cluster.conditions()).get(kind, ("", ""))[0] == "True"


async def _event(cluster: Cluster, reason: str) -> bool:
    return any(e[1] == reason for e in await cluster.events())


async def _workers_running(cluster: Cluster) -> bool:
    workers = live(await cluster.workers())
    return len(workers) == 2 and all(phase(w) == "Running" for w in workers)


async def _nothing_running(cluster: Cluster) -> bool:
    return not [p for p in await cluster.list(PODS) if phase(p) in ("Pending", "Running")]


async def _no_pods(cluster: Cluster) -> bool:
    return await cluster.list(PODS) == [] and await launcher_pods(cluster) == []


@dataclass
class Matrix:
    tasks: dict[tuple[str, str, str], asyncio.Task[None]]
    cases: dict[tuple[str, str, str], Case]
    started: float


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def matrix(full_cluster: Any) -> AsyncIterator[Matrix]:
    """Every case running: a namespace each, one operator per gang mode watching its
    cases' namespaces, the stand-in Volcano binding in the Volcano ones. Everything
    stopped and deleted afterwards, whatever happened."""
    # A Workload API PodGroup goes only once kube-controller-manager's podgroup-protection
    # controller (GenericWorkload gate) removes its finalizer: the cluster is set up so.
    kcm = full_cluster.processes["kube-controller-manager"]
    assert any("GenericWorkload=true" in arg for arg in kcm.args), kcm.args
    namespaces = {c: full_cluster.create_namespace("matrix", wait_for_sa=False) for c in CASES}
    started = time.monotonic()
    try:
        async with api_client(full_cluster, qps=200, burst=400) as kube:
            cases = {c: Case(*c, cluster=Cluster(kube, ns)) for c, ns in namespaces.items()}
            volcano = [case.cluster for c, case in cases.items() if c[1] == "volcano"]
            async with contextlib.AsyncExitStack() as stack:
                for mode in GANGS:
                    watched = tuple(ns for c, ns in namespaces.items() if c[1] == mode)
                    # One operator per gang mode, watching its cases' namespaces.
                    start = await stack.enter_async_context(
                        controllers(full_cluster, watched, MPIJobController)  # type: ignore[arg-type]
                    )
                    await start(gang=_gang(mode), qps=100, burst=200)
                await stack.enter_async_context(
                    fake_gang_scheduler(volcano, "volcano", VOLCANO_NODE, min_member=3)
                )
                tasks = {c: asyncio.create_task(run_case(case)) for c, case in cases.items()}
                try:
                    yield Matrix(tasks, cases, started)
                finally:
                    for task in tasks.values():
                        task.cancel()
                    await asyncio.gather(*tasks.values(), return_exceptions=True)
    finally:
        for ns in namespaces.values():
            full_cluster.delete_namespace(ns)


@pytest.mark.parametrize(("action", "gang", "failure"), CASES, ids=["-".join(c) for c in CASES])
async def test_feature_matrix_case_ends_as_documented(
    matrix: Matrix, action: str, gang: str, failure: str
) -> None:
    key = (action, gang, failure)
    case = matrix.cases[key]
    try:
        await asyncio.wait_for(asyncio.shield(matrix.tasks[key]), CASE_SECONDS)
    except TimeoutError as err:
        raise AssertionError(f"{case}: not done in {CASE_SECONDS}s; steps {case.steps}") from err
    print(f"MATRIX {action}/{gang}/{failure}: {case.seconds:.1f}s, steps {case.steps}")
