"""Decide, write, then act, on the real API server: a terminal decision whose status
write is refused is not acted on, and once the write goes through the job ends as
decided, with no pod made again and no launcher resumed.

A ValidatingAdmissionPolicy refuses the job's status writes (403) while a label is on
it. The job runs; the label goes on; a pod fails in a way that ends the job; the
refusal holds for a while (the operator retries, and must neither stop the launcher nor
delete the workers, whose failures are the evidence of its decision); then the label
goes and the job must end with the decided condition. A second case stops the operator
while the write is refused and starts a new one (a crash or a failover between the
decision and the write) before the refusal is lifted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from controller_harness import Cluster, StartOperator, mpijob
from refusals import StatusRefusal, status_refusal

from devcluster.polling import eventually
from mpi_operator.client import MPIJOBS, PODS

Obj = dict[str, Any]
FAIL_ON_42 = {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
REFUSED_FOR = 6.0  # seconds the refusal holds after the decision was made


def _terminated(exit_code: int, reason: str = "Error") -> Obj:
    terminated = {"exitCode": exit_code, "reason": reason, "finishedAt": "2026-01-01T00:00:00Z"}
    return {
        "name": "main",
        "image": "mpi-pi:latest",
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "state": {"terminated": terminated},
    }


async def _fail_worker(cluster: Cluster, exit_code: int) -> None:
    pod = (await cluster.wait_workers(2))[0]
    await cluster.set_pod_status(pod, phase="Failed", containerStatuses=[_terminated(exit_code)])


async def _evict_worker(cluster: Cluster) -> None:
    pod = (await cluster.wait_workers(2))[0]
    await cluster.set_pod_status(pod, phase="Failed", reason="Evicted", message="low memory")


async def _fail_launcher(cluster: Cluster) -> None:
    await cluster.finish_launcher(succeeded=False, reason="BackoffLimitExceeded")


Ending = Callable[[Cluster], Awaitable[None]]

# name: (runPolicy, what ends the job, the Failed condition's reason)
PATHS: dict[str, tuple[Obj, Ending, str]] = {
    "fail-job-rule": (
        {"failurePolicy": {"maxRestarts": 3, "rules": [{"name": "42", **FAIL_ON_42}]}},
        lambda c: _fail_worker(c, 42),
        "PodFailurePolicy",
    ),
    "reached-max-restarts": (
        {"failurePolicy": {"maxRestarts": 0}},
        lambda c: _fail_worker(c, 1),
        "ReachedMaxRestarts",
    ),
    "evicted": ({}, _evict_worker, "MPIJobEvicted"),
    "launcher-failed": ({}, _fail_launcher, "BackoffLimitExceeded"),
}


class PodLedger:
    """Every worker pod uid and launcher suspension seen, polled through the run."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.worker_uids: set[str] = set()
        self.resumed_after_stop = False
        self._stopped = False

    async def look(self) -> None:
        for pod in await self.cluster.workers():
            self.worker_uids.add(pod["metadata"]["uid"])
        launcher = await self.cluster.launcher()
        if launcher is None:
            return
        suspended = bool(launcher["spec"].get("suspend"))
        if suspended:
            self._stopped = True
        elif self._stopped:
            self.resumed_after_stop = True


async def _running_job(cluster: Cluster, start: StartOperator, run_policy: Obj) -> Any:
    """Starts an operator and runs the job to Running; returns the operator."""
    operator = await start()
    await cluster.create(mpijob(runPolicy={"cleanPodPolicy": "All", **run_policy}))
    workers = await cluster.wait_workers(2)
    await cluster.set_pods_running(workers, ready=True)
    launcher = await cluster.wait_launcher()
    await cluster.create_launcher_pod(launcher)
    await cluster.wait_condition("Running")
    return operator


async def _hold(ledger: PodLedger, seconds: float) -> None:
    """While the write is refused: nothing the decision would do may happen."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await ledger.look()
        assert len(await ledger.cluster.wait_workers(2)) == 2, "workers deleted before the write"
        launcher = await ledger.cluster.launcher()
        assert launcher is not None and not launcher["spec"].get("suspend"), (
            "the launcher was stopped before the decision was written"
        )
        assert "Failed" not in await ledger.cluster.conditions()
        await asyncio.sleep(0.5)


async def _ends_as_decided(ledger: PodLedger, reason: str) -> None:
    cluster = ledger.cluster
    await cluster.wait_condition("Failed", within=60)
    assert (await cluster.conditions())["Failed"] == ("True", reason)
    uids = set(ledger.worker_uids)

    async def cleaned_up() -> bool:
        await ledger.look()
        return not [
            p for p in await cluster.workers() if not p["metadata"].get("deletionTimestamp")
        ]

    await eventually(cleaned_up, within=30, what="the workers cleaned up after the write")
    # A while longer: no worker is made again, the launcher is never resumed.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        await ledger.look()
        await asyncio.sleep(0.3)
    assert ledger.worker_uids == uids, "a worker pod was created after the job failed"
    assert not ledger.resumed_after_stop
    assert (await cluster.conditions())["Failed"] == ("True", reason)


@pytest.fixture
async def refusal(api_cluster: Any, cluster: Cluster) -> Any:
    probe = mpijob("probe", runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"})
    async with status_refusal(api_cluster, cluster.kube, MPIJOBS, cluster.ns, probe) as it:
        yield it


@pytest.mark.parametrize("path", sorted(PATHS))
async def test_a_refused_terminal_write_is_not_acted_on_and_ends_as_decided(
    cluster: Cluster, start_operator: StartOperator, refusal: StatusRefusal, path: str
) -> None:
    run_policy, end, reason = PATHS[path]
    await _running_job(cluster, start_operator, run_policy)
    ledger = PodLedger(cluster)
    await ledger.look()
    await refusal.refuse("job")
    await end(cluster)
    await _hold(ledger, REFUSED_FOR)
    await refusal.allow("job")
    await _ends_as_decided(ledger, reason)


async def test_an_operator_stopped_before_the_write_leaves_the_decision_to_the_next(
    cluster: Cluster, start_operator: StartOperator, refusal: StatusRefusal
) -> None:
    run_policy, end, reason = PATHS["fail-job-rule"]
    first = await _running_job(cluster, start_operator, run_policy)
    ledger = PodLedger(cluster)
    await ledger.look()
    await refusal.refuse("job")
    await end(cluster)
    await _hold(ledger, REFUSED_FOR / 2)
    await first.stop(drain_seconds=0)  # gone between its decision and its write
    await start_operator()  # the next leader
    await _hold(ledger, REFUSED_FOR / 2)
    await refusal.allow("job")
    await _ends_as_decided(ledger, reason)


async def test_a_worker_that_failed_first_is_named_when_the_launcher_job_finished_too(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    """A worker is OOMKilled, mpirun exits a moment later and its Job fails at once; the
    operator's first look sees both (it was stopped meanwhile): the worker is the
    culprit, not the launcher."""
    first = await _running_job(cluster, start_operator, {})
    await first.stop(drain_seconds=0)
    worker = (await cluster.wait_workers(2))[1]
    oom = {**_terminated(137, "OOMKilled")}
    oom["state"]["terminated"]["finishedAt"] = "2026-01-01T00:00:01Z"
    await cluster.set_pod_status(worker, phase="Failed", containerStatuses=[oom])
    launcher_pod = next(
        p for p in await cluster.list(PODS) if p["metadata"]["name"].startswith("job-launcher")
    )
    exited = _terminated(1)
    exited["state"]["terminated"]["finishedAt"] = "2026-01-01T00:00:03Z"
    await cluster.set_pod_status(launcher_pod, phase="Failed", containerStatuses=[exited])
    await cluster.finish_launcher(succeeded=False, reason="BackoffLimitExceeded")
    await start_operator()
    await cluster.wait_condition("Failed", within=30)
    failure = (await cluster.job())["status"]["lastFailure"]
    assert failure["pod"] == worker["metadata"]["name"], failure
    assert failure["reason"] == "OOMKilled", failure
