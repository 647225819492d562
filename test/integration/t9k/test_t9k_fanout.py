"""T9k pods are created as the Kubeflow workers are: slow-start batches, at most 500 a
sync, the client's budget in turns per job, creation expectations fed by the pod
informer. Before, a T9k job created every pod at once: at 10 qps, 1,000 pods reserved
the client's tokens 100 s ahead and another job's pods and status waited behind them;
and with no expectations, a sync racing the cache created its pods again."""

from __future__ import annotations

import asyncio

from harness import delete_when_added, small_beside_big
from t9k_harness import StartT9k, T9kCluster, conditions, t9k_job

from devcluster.polling import eventually

QPS = 10
BIG = 1000


async def test_a_big_t9k_jobs_backlog_does_not_delay_a_small_jobs_pods_and_status(
    t9k: T9kCluster, start_t9k: StartT9k
) -> None:
    await start_t9k(qps=QPS, burst=QPS)
    try:

        async def fanning_out() -> bool:
            return len(await t9k.pods("big")) >= 30

        async def small_pods() -> bool:
            return set(await t9k.pods("small")) == {"small-launcher", "small-worker-0"}

        async def small_status() -> bool:
            return conditions(await t9k.status("small")).get("Initialized") == "True"

        pods_after, status_after = await small_beside_big(
            t9k.create,
            (t9k_job("big", BIG), t9k_job("small", 1)),
            fanning_out,
            small_pods,
            small_status,
        )
        big_now = len(await t9k.pods("big"))
        print(f"small pods {pods_after:.1f}s, status +{status_after:.1f}s, big {big_now}/{BIG}")
        assert pods_after <= 5.0
        assert status_after <= 5.0
        assert big_now < BIG - 5 * QPS  # the big job still had a long way to go
    finally:
        # No garbage collector on this cluster: remove the pods ourselves.
        await t9k.kube.request("DELETE", f"/api/v1/namespaces/{t9k.ns}/pods")


async def test_a_t9k_worker_deleted_right_after_its_creation_is_created_again(
    t9k: T9kCluster, start_t9k: StartT9k
) -> None:
    controller = await start_t9k()
    deleter = await delete_when_added(t9k.kube, t9k.ns, "job-worker-1")
    try:
        await t9k.create(t9k_job(workers=2))
        deleted = await asyncio.wait_for(deleter, 30)

        async def recreated() -> bool:
            again = (await t9k.pods()).get("job-worker-1")
            return again is not None and again["metadata"]["uid"] != deleted

        await eventually(recreated, within=20, what="job-worker-1 created again")
        await t9k.kube.delete(t9k.resource, t9k.ns, "job")
        await eventually(
            lambda: controller.state.creations.keys() == [], 20, what="expectations dropped"
        )
    finally:
        deleter.cancel()
        await t9k.kube.request("DELETE", f"/api/v1/namespaces/{t9k.ns}/pods")
