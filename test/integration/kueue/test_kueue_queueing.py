"""Queueing through the real Kueue: a ClusterQueue with quota for one job, two MPIJobs in
its LocalQueue. Kueue's webhook suspends both at creation; Kueue admits the first; our
operator runs nothing of the second (no worker pod, no running launcher) until the first
has Succeeded and Kueue admits the second, which then runs and Succeeds too. Each
Workload's podSets are the job's (launcher 1, worker n), with ``runLauncherAsWorker`` too."""

from __future__ import annotations

from typing import Any

from kueue_harness import (
    KueueObjects,
    StartOperator,
    condition,
    holds,
    is_true,
    job_condition,
    podsets,
    queued_mpijob,
    suspended,
)


async def test_second_job_waits_for_the_quota_then_runs(
    kq: KueueObjects, start_operator: StartOperator
) -> None:
    await start_operator()
    flavor = await kq.flavor("default")
    cq = await kq.cluster_queue("one-job", flavor, cpu="3")  # a launcher and 2 workers
    lq = await kq.local_queue("queue", cq)

    first = await kq.create(queued_mpijob("first", lq))
    second = await kq.create(queued_mpijob("second", lq, launcher_runs_for="1s"))
    # Kueue's mutating webhook suspended both as the API server stored them.
    assert suspended(first) and suspended(second)

    wl_first = await kq.wait_workload("first", lambda w: is_true(w, "Admitted"), "Admitted")
    assert podsets(wl_first) == [("launcher", 1), ("worker", 2)]
    assert wl_first["spec"]["queueName"] == lq
    await kq.wait_job("first", lambda j: not suspended(j), "resumed by Kueue")
    await kq.wait_running("first", workers=2)
    await kq.wait_job(
        "first", lambda j: job_condition(j, "Running")[0] == "True", "Running", within=30
    )
    # Kueue reads the job's Running condition as its pods being ready.
    await kq.wait_workload("first", lambda w: is_true(w, "PodsReady"), "PodsReady")

    def pending(wl: dict[str, Any]) -> bool:
        reserved = condition(wl, "QuotaReserved") or {}
        return reserved.get("status") == "False" and reserved.get("reason") == "Pending"

    wl_second = await kq.wait_workload("second", pending, "pending for quota")
    assert podsets(wl_second) == [("launcher", 1), ("worker", 2)]

    async def second_held() -> bool:
        job = await kq.job("second")
        launcher = await kq.launcher_job("second")
        return (
            suspended(job)
            and job_condition(job, "Suspended")[0] == "True"
            and await kq.pods("second") == []
            and (launcher is None or launcher["spec"].get("suspend") is True)
        )

    await holds(second_held, 3, "the second job suspended, without pods")
    still = await kq.workload("second")
    assert still is not None and not is_true(still, "Admitted")

    await kq.finish_launcher("first")
    await kq.wait_job("first", lambda j: job_condition(j, "Succeeded")[0] == "True", "Succeeded")
    await kq.wait_workload("first", lambda w: is_true(w, "Finished"), "Finished")

    await kq.wait_workload("second", lambda w: is_true(w, "Admitted"), "Admitted")
    await kq.wait_job("second", lambda j: not suspended(j), "resumed by Kueue")
    await kq.wait_job("second", lambda j: job_condition(j, "Succeeded")[0] == "True", "Succeeded")
    await kq.wait_workload("second", lambda w: is_true(w, "Finished"), "Finished")
    assert await kq.warnings() == []


async def test_launcher_as_worker_job_is_queued_with_its_pod_sets(
    kq: KueueObjects, start_operator: StartOperator
) -> None:
    """``runLauncherAsWorker: true``: the launcher is one more MPI slot, not one more pod;
    Kueue's pod sets are still the job's pods (launcher 1, worker n), the quota for
    exactly them admits the job, and it runs and Succeeds."""
    await start_operator()
    flavor = await kq.flavor("default")
    cq = await kq.cluster_queue("one-job", flavor, cpu="3")
    lq = await kq.local_queue("queue", cq)
    job = queued_mpijob("as-worker", lq)
    job["spec"]["runLauncherAsWorker"] = True
    assert suspended(await kq.create(job))

    wl = await kq.wait_workload("as-worker", lambda w: is_true(w, "Admitted"), "Admitted")
    assert podsets(wl) == [("launcher", 1), ("worker", 2)]
    await kq.wait_running("as-worker", workers=2)
    await kq.wait_workload("as-worker", lambda w: is_true(w, "PodsReady"), "PodsReady")
    await kq.finish_launcher("as-worker")
    await kq.wait_job(
        "as-worker", lambda j: job_condition(j, "Succeeded")[0] == "True", "Succeeded"
    )
    await kq.wait_workload("as-worker", lambda w: is_true(w, "Finished"), "Finished")
    assert await kq.warnings() == []
