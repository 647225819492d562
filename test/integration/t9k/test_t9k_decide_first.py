"""T9k on the real API server: a decision is written before it is acted on.

The API server refuses the job's status writes while it carries a label (a
ValidatingAdmissionPolicy on ``mpijobs/status``; no webhook server). A worker exits 3
under ``cleanUpWorkers: all``: the operator decides the job failed and cannot write it.
Before, it deleted the workers first, and its next sync, finding no failed worker,
created both again: the job stayed Running for good. Now nothing is deleted until the
Failed status is written; once the label is lifted the job ends Failed, the workers go,
and no pod is created from the moment the worker failed. The second test SIGKILLs the
operator while the write is refused and lets a new process finish the job.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import record_pod_deletes
from refusals import REFUSE_LABEL, REFUSED_MESSAGE, refusal_objects
from t9k_harness import StartT9k, T9kCluster, t9k_job

from devcluster.polling import eventually
from devcluster.testing import OperatorProcess, wait_until
from mpi_operator.client import PODS, ApiError, KubeClient
from mpi_operator.controller.t9k.context import T9K_MPIJOBS

REFUSE = REFUSE_LABEL
REFUSED_BY = REFUSED_MESSAGE
ALL = {"job-launcher", "job-worker-0", "job-worker-1"}
#: How long the status writes stay refused after the worker failed: long enough for
#: several retries of the refused write (the old bug deleted the workers in the very
#: sync whose write was refused, and recreated them in the next one).
HOLD = 8.0
#: Short leases: a SIGKILLed operator's successor leads within seconds.
LEASE_FLAGS = ("--lease-duration=4", "--renew-deadline=3", "--retry-period=0.5")


def _policy(name: str, namespace: str) -> str:
    return yaml.safe_dump_all(refusal_objects(name, T9K_MPIJOBS, namespace))


@pytest.fixture
def refusing(api_cluster: Any, namespace: str) -> Iterator[None]:
    """The policy refusing status writes of this namespace's labelled T9k MPIJobs."""
    name = f"refuse-status-{namespace}"[:63]
    api_cluster.kubectl("apply", "-f", "-", input=_policy(name, namespace))
    try:
        yield
    finally:
        for kind in ("validatingadmissionpolicybinding", "validatingadmissionpolicy"):
            api_cluster.kubectl("delete", kind, name, "--ignore-not-found", check=False)


async def _policy_in_force(t9k: T9kCluster) -> None:
    """The policy takes a moment to load: a labelled job's status write is refused."""
    probe = t9k_job("probe", workers=1)
    probe["metadata"]["labels"] = {REFUSE: "true"}
    await t9k.create(probe)

    async def refused() -> bool:
        body = {**(await t9k.job("probe")), "status": {"phase": "Pending"}}
        try:
            await t9k.kube.replace_status(t9k.resource, t9k.ns, "probe", body)
        except ApiError as err:
            return REFUSED_BY in err.message
        return False

    await eventually(refused, within=30, interval=0.5, what="the policy refusing status writes")
    await t9k.kube.delete(t9k.resource, t9k.ns, "probe")


class PodsAdded:
    """Every pod the API server adds to the namespace from now on (a watch)."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self.kube, self.ns = kube, namespace
        self.added: list[tuple[str, str, float]] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        rv = (await self.kube.list(PODS, self.ns, limit=1))["metadata"]["resourceVersion"]
        self._task = asyncio.create_task(self._run(rv))

    async def _run(self, rv: str) -> None:
        async for event in self.kube.watch(PODS, self.ns, resource_version=rv):
            if isinstance(event, dict) and event.get("type") == "ADDED":
                meta = event["object"]["metadata"]
                self.added.append((meta["name"], meta["uid"], time.monotonic()))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


@pytest.fixture
async def pods_added(t9k: T9kCluster) -> AsyncIterator[PodsAdded]:
    watcher = PodsAdded(t9k.kube, t9k.ns)
    try:
        yield watcher
    finally:
        await watcher.stop()


async def _running_job(t9k: T9kCluster) -> dict[str, str]:
    """A job of two workers with ``cleanUpWorkers: all``, Running; its pods' uids."""
    await t9k.create(t9k_job(workers=2, runPolicy={"cleanUpWorkers": "all"}))
    pods = await t9k.wait_pods(ALL, within=30)
    for name in sorted(ALL):
        await t9k.set_phase(name, "Running")
    await t9k.wait_phase("Running", within=30)
    return {name: pod["metadata"]["uid"] for name, pod in pods.items()}


async def _lift_and_check(t9k: T9kCluster, pods_added: PodsAdded, uids: dict[str, str]) -> None:
    """While refused, nothing was deleted nor created; lifted, the job ends Failed, the
    workers go, and no pod is created."""
    assert {n: p["metadata"]["uid"] for n, p in (await t9k.pods()).items()} == uids
    assert (await t9k.status()).get("phase") == "Running"
    await t9k.patch_job({"metadata": {"labels": {REFUSE: None}}})
    lifted = time.monotonic()
    status = await t9k.wait_phase("Failed", within=60)
    print(f"Failed {time.monotonic() - lifted:.1f}s after the refusal was lifted")
    failed = [c for c in status["conditions"] if c["type"] == "Failed"]
    assert failed[0]["reason"] == "WorkerFailed", status
    await t9k.wait_pods({"job-launcher"}, within=30)  # the workers went; mpirun's pod stays
    await asyncio.sleep(3)  # a pod created now would show in the watch
    assert pods_added.added == [], f"pods created after the worker failed: {pods_added.added}"
    assert (await t9k.status()).get("phase") == "Failed"


async def test_a_failed_worker_whose_status_write_is_refused_ends_the_job_once_allowed(
    t9k: T9kCluster, start_t9k: StartT9k, refusing: None, pods_added: PodsAdded
) -> None:
    await _policy_in_force(t9k)
    controller = await start_t9k(qps=50, burst=100)
    deletes = record_pod_deletes(controller)
    refusals = _record_refusals(controller)
    uids = await _running_job(t9k)
    await t9k.patch_job({"metadata": {"labels": {REFUSE: "true"}}})
    await pods_added.start()
    await t9k.set_phase("job-worker-0", "Failed", exit_code=3)
    await eventually(lambda: bool(refusals), within=20, what="a refused Failed status write")
    await asyncio.sleep(HOLD)
    assert set(refusals) == {"Failed"}, refusals
    assert deletes == [], f"pods deleted before the decision was written: {deletes}"
    await _lift_and_check(t9k, pods_added, uids)
    assert deletes, "the workers were not cleaned up"
    print(f"{len(refusals)} refused status writes in {HOLD:.0f}s")


def _record_refusals(controller: Any) -> list[str]:
    """Spies on a controller's status writes: the phase of each one the policy refused."""
    client: Any = controller.syncer.ctx.client
    refusals: list[str] = []
    real = client.replace_status

    async def replace_status(resource: Any, namespace: str | None, name: str, body: Any) -> Any:
        try:
            return await real(resource, namespace, name, body)
        except ApiError as err:
            if REFUSED_BY in err.message:
                refusals.append(str((body.get("status") or {}).get("phase")))
            raise

    client.replace_status = replace_status
    return refusals


def _operator(api_cluster: Any, namespace: str, log: Path) -> OperatorProcess:
    return OperatorProcess(
        [
            f"--kubeConfig={api_cluster.kubeconfig}",
            f"--namespace={namespace}",
            f"--lock-namespace={namespace}",
            "--kube-api-qps=50",
            "--kube-api-burst=100",
            "--shutdown-drain-seconds=0.5",
            *LEASE_FLAGS,
        ],
        log,
    ).start()


def _leading(proc: OperatorProcess) -> bool:
    assert proc.poll() is None, proc.output()[-3000:]
    try:
        return "mpi_operator_is_leader 1.0" in proc.metrics()
    except (OSError, RuntimeError):
        return False


async def test_an_operator_killed_while_its_ending_is_refused_leaves_it_to_the_next(
    api_cluster: Any,
    t9k: T9kCluster,
    t9k_crds: None,
    refusing: None,
    pods_added: PodsAdded,
    tmp_path: Path,
) -> None:
    await _policy_in_force(t9k)
    procs = [_operator(api_cluster, t9k.ns, tmp_path / "operator-0.log")]
    try:
        await asyncio.to_thread(wait_until, lambda: _leading(procs[0]), 60, "the operator leads")
        uids = await _running_job(t9k)
        await t9k.patch_job({"metadata": {"labels": {REFUSE: "true"}}})
        await pods_added.start()
        await t9k.set_phase("job-worker-0", "Failed", exit_code=3)

        def refused(proc: OperatorProcess) -> bool:
            return REFUSED_BY in proc.output()

        await asyncio.to_thread(wait_until, lambda: refused(procs[0]), 30, "a refused write")
        procs[0].kill()  # SIGKILL: between the decision and its write
        procs.append(_operator(api_cluster, t9k.ns, tmp_path / "operator-1.log"))
        await asyncio.to_thread(wait_until, lambda: _leading(procs[1]), 60, "the successor leads")
        await asyncio.to_thread(wait_until, lambda: refused(procs[1]), 30, "its write refused")
        await asyncio.sleep(HOLD / 3)
        await _lift_and_check(t9k, pods_added, uids)
    finally:
        for proc in procs:
            proc.kill()
            print(f"--- {proc.log_path.name} ---\n{proc.output()[-2000:]}")
