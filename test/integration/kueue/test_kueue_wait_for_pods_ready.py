"""waitForPodsReady through the real Kueue, with a short timeout: an admitted MPIJob whose
workers can never be scheduled (a nodeSelector no node has) never becomes Running, so
Kueue evicts its Workload (``PodsReadyTimeout``), suspends the job and requeues it after
a backoff; each time our operator removes every pod and says Suspended before Kueue
admits the job again. After its last requeue Kueue deactivates the Workload and the job
stays suspended, without pods. (Workers that do become Ready, and Kueue's PodsReady
from the job's Running condition, are in the queueing test.)

The module restarts the suite's Kueue with the short timeout and puts the suite's back
afterwards."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kueue_harness import (
    KueueEnv,
    KueueObjects,
    StartOperator,
    condition,
    holds,
    job_condition,
    queued_mpijob,
    suspended,
)

from devcluster.polling import eventually

#: Evictions before Kueue deactivates the Workload (``backoffLimitCount``).
REQUEUES = 2


@pytest.fixture(scope="module", autouse=True)
def short_pods_ready_timeout(kueue_env: KueueEnv) -> Iterator[None]:
    kueue_env.restart_kueue(
        pods_ready_timeout="3s",
        requeuing={"timestamp": "Eviction", "backoffBaseSeconds": 2, "backoffLimitCount": REQUEUES},
    )
    try:
        yield
    finally:
        kueue_env.restart_kueue()


def requeues(wl: dict[str, Any]) -> int:
    return int(((wl.get("status") or {}).get("requeueState") or {}).get("count") or 0)


def evicted_times(times: int) -> Callable[[dict[str, Any]], bool]:
    return lambda wl: requeues(wl) >= times


async def test_job_not_ready_in_time_is_evicted_and_requeued_and_left_clean(
    kq: KueueObjects, start_operator: StartOperator
) -> None:
    await start_operator()
    flavor = await kq.flavor("default")
    cq = await kq.cluster_queue("one-job", flavor, cpu="3")
    lq = await kq.local_queue("queue", cq)
    job = queued_mpijob("unready", lq)
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["nodeSelector"] = {"example.com/no-such-pool": "none"}
    await kq.create(job)

    async def clean() -> bool:
        job = await kq.job("unready")
        launcher = await kq.launcher_job("unready")
        return (
            suspended(job)
            and job_condition(job, "Suspended")[0] == "True"
            and await kq.pods("unready") == []
            and (launcher is None or launcher["spec"].get("suspend") is True)
        )

    for n in range(1, REQUEUES + 1):
        await kq.wait_job("unready", lambda j: not suspended(j), f"admitted (run {n})")
        wl = await kq.wait_workload("unready", evicted_times(n), f"evicted {n} time(s)", within=60)
        evicted = condition(wl, "Evicted") or {}
        assert evicted.get("reason") == "PodsReadyTimeout", wl["status"]
        assert job_condition(await kq.job("unready"), "Running")[0] != "True"
        await eventually(clean, within=30, interval=0.1, what=f"unready clean after eviction {n}")

    wl = await kq.wait_workload(
        "unready", lambda w: w["spec"].get("active") is False, "deactivated", within=60
    )
    await eventually(clean, within=30, interval=0.1, what="unready clean once deactivated")
    await holds(clean, 2, "unready suspended, without pods")
    assert job_condition(await kq.job("unready"), "Succeeded")[0] != "True"
