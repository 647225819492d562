"""cleanPodPolicy at completion: Running, All and None."""

from __future__ import annotations

from typing import Any

import pytest
from controller_harness import Cluster, StartOperator, mpijob
from harness import record_pod_deletes

from devcluster.polling import eventually
from mpi_operator.client import PODS


@pytest.mark.parametrize(
    ("policy", "left"),
    [
        ("Running", ["job-worker-1"]),  # the Succeeded worker stays, the Running one goes
        ("All", []),
        ("None", ["job-worker-0", "job-worker-1"]),
    ],
)
async def test_clean_pod_policy(
    cluster: Cluster, start_operator: StartOperator, policy: str, left: list[str]
) -> None:
    await start_operator()
    await cluster.create(mpijob(runPolicy={"cleanPodPolicy": policy}))
    workers = await cluster.wait_workers(2)
    await cluster.set_pod_status(workers[0], phase="Running")
    await cluster.set_pod_status(workers[1], phase="Succeeded")
    await cluster.finish_launcher(succeeded=True)
    await cluster.wait_condition("Succeeded")
    pods = await cluster.wait_workers(len(left))
    assert [p["metadata"]["name"] for p in pods] == left


async def test_clean_pod_policy_running_keeps_finished_workers_of_a_collection(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    """Two workers to delete go as one collection, whose field selector (status.phase)
    the real API server applies: the Succeeded worker stays."""
    await start_operator()
    await cluster.create(mpijob(workers=3, runPolicy={"cleanPodPolicy": "Running"}))
    workers = await cluster.wait_workers(3)
    await cluster.set_pod_status(workers[0], phase="Running")
    await cluster.set_pod_status(workers[1], phase="Succeeded")
    await cluster.set_pod_status(workers[2], phase="Pending")
    await cluster.finish_launcher(succeeded=True)
    await cluster.wait_condition("Succeeded")
    pods = await cluster.wait_workers(1)
    assert [p["metadata"]["name"] for p in pods] == ["job-worker-1"]


async def test_terminating_workers_are_not_deleted_again(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    """A worker already being deleted (held here by a finalizer) gets one DELETE (here the
    delete of the workers' collection), however often the finished job is synced again."""
    controller = await start_operator()
    deletes = record_pod_deletes(controller)
    await cluster.create(mpijob(runPolicy={"cleanPodPolicy": "All"}))
    workers = await cluster.wait_workers(2)
    held = workers[0]["metadata"]["name"]
    await cluster.kube.patch(PODS, cluster.ns, held, {"metadata": {"finalizers": [FINALIZER]}})
    try:
        await cluster.set_pods_running(workers)
        await cluster.finish_launcher(succeeded=True)
        await cluster.wait_condition("Succeeded")

        async def terminating() -> bool:
            pod = await cluster.kube.get(PODS, cluster.ns, held)
            return bool(pod["metadata"].get("deletionTimestamp"))

        await eventually(terminating, within=20, what=f"{held} terminating")
        # More syncs of the finished job, triggered by updates of the terminating pod.
        for touch in ("1", "2"):
            await cluster.kube.patch(
                PODS, cluster.ns, held, {"metadata": {"annotations": {"test/touch": touch}}}
            )
        pods = controller.informers.pods.lister

        def cached_touch() -> bool:
            pod = pods.get(cluster.ns, held)
            return (
                pod is not None and pod["metadata"].get("annotations", {}).get("test/touch") == "2"
            )

        await eventually(cached_touch, within=20, what="the last update of the pod cached")
        syncs_before = reconciles(controller)
        await eventually(
            lambda: reconciles(controller) >= syncs_before + 1,
            within=20,
            what="a sync after the terminating pod's last update",
        )
        await cluster.wait_condition("Succeeded")
        assert [d.get("name", "the workers' collection") for d in deletes] == [
            "the workers' collection"
        ], deletes
    finally:
        await cluster.kube.patch(PODS, cluster.ns, held, {"metadata": {"finalizers": None}})


async def test_cleanup_deletes_its_own_workers_and_reports_the_one_it_lost(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    """Worker 0 loses its owner reference: worker 1 is still deleted, and worker 0 is
    reported (the reference stops at worker 0 and deletes nothing)."""
    await start_operator()
    await cluster.create(mpijob(runPolicy={"cleanPodPolicy": "All"}))
    workers = await cluster.wait_workers(2)
    await cluster.set_pods_running(workers)
    await cluster.kube.patch(
        PODS, cluster.ns, "job-worker-0", {"metadata": {"ownerReferences": None}}
    )
    await cluster.finish_launcher(succeeded=True)
    left = await cluster.wait_workers(1)
    assert [p["metadata"]["name"] for p in left] == ["job-worker-0"]
    assert await cluster.wait_event("ErrResourceExists") == (
        "Warning",
        "ErrResourceExists",
        'Resource "job-worker-0" of Kind "" already exists and is not managed by MPIJob',
    )


FINALIZER = "test.mpi-operator/hold"


def reconciles(controller: Any) -> float:
    """Syncs finished so far, whatever their result."""
    return sum(
        controller.registry.get_sample_value(
            "mpi_operator_reconcile_duration_seconds_count", {"result": result}
        )
        or 0.0
        for result in ("success", "error")
    )
