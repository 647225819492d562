"""cleanPodPolicy at completion: Running, All and None."""

from __future__ import annotations

import pytest
from controller_harness import Cluster, StartOperator, mpijob


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
