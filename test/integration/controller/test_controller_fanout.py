"""Fair fan-out and creation expectations against the real API server.

* A big job's backlog of pod creates must not hold back another job: the client's
  budget is shared in turns per job (``client/ratelimit.py`` FairTokenBucket) and one
  sync creates at most 500 pods (``controller/core/pods.py``). Before, the big job's
  slow-start batches reserved the client's tokens far ahead (a batch of 128 at
  10 qps: 12.8 s, then 256: 25.6 s) and every other request waited behind them.
* A worker pod deleted right after it was created is created again at once: the pod
  informer's events end its flight in the creation expectations. Before, it stayed
  "in flight" for 300 s and was not recreated.
"""

from __future__ import annotations

import asyncio

from controller_harness import Cluster, StartOperator, mpijob
from harness import delete_when_added, small_beside_big

from devcluster.polling import eventually

QPS = 10  # the operator client's; the big job's backlog: (1000 - 130) / 10 = 87 s
BIG = 1000


async def _cleanup_pods(cluster: Cluster) -> None:
    # No garbage collector on this cluster: remove the big job's pods ourselves.
    await cluster.kube.request("DELETE", f"/api/v1/namespaces/{cluster.ns}/pods")


async def test_a_big_jobs_backlog_does_not_delay_a_small_jobs_pods_and_status(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    await start_operator(qps=QPS, burst=QPS)
    try:

        async def fanning_out() -> bool:
            return len(await cluster.workers("big")) >= 130

        async def small_pod() -> bool:
            return len(await cluster.workers("small")) == 1

        async def small_status() -> bool:
            return "Created" in await cluster.conditions("small")

        pods_after, status_after = await small_beside_big(
            cluster.create,
            (mpijob("big", BIG), mpijob("small", 1)),
            fanning_out,
            small_pod,
            small_status,
        )
        big_now = len(await cluster.workers("big"))
        print(f"small pod {pods_after:.1f}s, status +{status_after:.1f}s, big {big_now}/{BIG}")
        assert pods_after <= 5.0
        assert status_after <= 5.0
        assert big_now < BIG - 5 * QPS  # the big job still had a long way to go
    finally:
        await _cleanup_pods(cluster)


async def test_a_worker_deleted_right_after_its_creation_is_created_again(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    controller = await start_operator()
    deleter = await delete_when_added(cluster.kube, cluster.ns, "job-worker-1")
    try:
        await cluster.create(mpijob(workers=2))
        deleted = await asyncio.wait_for(deleter, 30)

        async def recreated() -> bool:
            pods = {p["metadata"]["name"]: p for p in await cluster.workers()}
            again = pods.get("job-worker-1")
            return again is not None and again["metadata"]["uid"] != deleted

        await eventually(recreated, within=20, what="job-worker-1 created again")
        await cluster.kube.delete(cluster.resource, cluster.ns, "job")

        async def forgotten() -> bool:
            return controller.state.creations.keys() == []

        await eventually(forgotten, within=20, what="the deleted job's expectations dropped")
    finally:
        deleter.cancel()
        await _cleanup_pods(cluster)
