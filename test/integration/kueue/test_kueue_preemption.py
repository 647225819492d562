"""Preemption through the real Kueue: in a ClusterQueue with quota for one job that lets
a higher priority preempt a lower one, a high-priority MPIJob evicts a running
low-priority one. Kueue suspends the low job; our operator removes its pods and says
Suspended (its replica statuses no longer active, which is what lets Kueue release the
quota); the high job runs and Succeeds; the low job is admitted again, runs again and
Succeeds. Both with the launcher made at once and with it made when the workers are
Ready (``launcherCreationPolicy: WaitForWorkersReady``)."""

from __future__ import annotations

from typing import Any

import pytest
from kueue_harness import (
    KueueObjects,
    StartOperator,
    condition,
    is_true,
    job_condition,
    queued_mpijob,
    suspended,
)

from devcluster.polling import eventually


@pytest.mark.parametrize("creation", ["AtStartup", "WaitForWorkersReady"])
async def test_higher_priority_job_preempts_and_the_preempted_job_runs_later(
    kq: KueueObjects, start_operator: StartOperator, creation: str
) -> None:
    await start_operator()
    low = await kq.priority_class("low", 100)
    high = await kq.priority_class("high", 1000)
    flavor = await kq.flavor("default")
    cq = await kq.cluster_queue(
        "one-job", flavor, cpu="3", preemption={"withinClusterQueue": "LowerPriority"}
    )
    lq = await kq.local_queue("queue", cq)

    low_job = queued_mpijob("low", lq, priority_class=low)
    low_job["spec"]["launcherCreationPolicy"] = creation
    await kq.create(low_job)
    await kq.wait_workload("low", lambda w: is_true(w, "Admitted"), "Admitted")
    first_run = await kq.wait_running("low", workers=2)

    await kq.create(queued_mpijob("high", lq, priority_class=high, launcher_runs_for="2s"))

    def preempted(wl: dict[str, Any]) -> bool:
        evicted = condition(wl, "Evicted") or {}
        return evicted.get("status") == "True" and evicted.get("reason") == "Preempted"

    await kq.wait_workload("low", preempted, "Evicted by preemption")
    await kq.wait_job(
        "low",
        lambda j: suspended(j) and job_condition(j, "Suspended")[0] == "True",
        "suspended by Kueue and saying so",
    )

    async def low_pods_gone() -> bool:
        return await kq.pods("low") == []

    await eventually(low_pods_gone, within=60, interval=0.2, what="the low job's pods gone")

    await kq.wait_workload("high", lambda w: is_true(w, "Admitted"), "Admitted")
    await kq.wait_job(
        "high", lambda j: job_condition(j, "Succeeded")[0] == "True", "Succeeded", within=90
    )

    await kq.wait_workload("low", lambda w: is_true(w, "Admitted"), "Admitted again", within=90)
    await kq.wait_job("low", lambda j: not suspended(j), "resumed by Kueue")
    second_run = await kq.wait_running("low", workers=2)
    await kq.wait_workload("low", lambda w: is_true(w, "PodsReady"), "PodsReady again")
    first = {p["metadata"]["uid"] for p in first_run}
    assert not first & {p["metadata"]["uid"] for p in second_run}
    await kq.finish_launcher("low")
    await kq.wait_job("low", lambda j: job_condition(j, "Succeeded")[0] == "True", "Succeeded")
    await kq.wait_workload("low", lambda w: is_true(w, "Finished"), "Finished")
    assert await kq.warnings() == []
