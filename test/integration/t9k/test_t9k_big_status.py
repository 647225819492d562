"""A T9k job whose old status would not stay under 256 KiB reaches Running on KWOK with
its status written.

The status used to list every pod in ``tasks`` (about 210 bytes a worker): 1,500
workers made it well over 256 KiB, and past about 7,000 the API server refused every
write. Now a job of more than 100 pod slots lists only the pods that are not Running,
at most 100, and ``aggregate`` counts them all. The test runs the T9k controller
in-process against the full cluster (kube-scheduler and KWOK's fake nodes run the
pods), measures the written status's size and the time to Running, and checks what
the old one-entry-per-pod list would have weighed with the same pods.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from harness import api_client, controllers
from t9k_harness import T9K_CRD, T9kCluster, t9k_job

from devcluster.components import fake_node
from devcluster.crds import crds_installed
from devcluster.polling import eventually
from mpi_operator.api.t9k import parse, set_defaults
from mpi_operator.controller.t9k import T9kMPIJobController
from mpi_operator.controller.t9k.tasks import MAX_TASKS, slots, task_of

WORKERS = 1500
#: Fake nodes added for the test: the cluster's four take 250 pods each.
EXTRA_NODES = 4
BUDGET = 256 * 1024


@pytest.fixture
def room(full_cluster: Any) -> Iterator[None]:
    """The T9k CRD, and room for the job's pods on KWOK nodes of the test's own."""
    names = [f"kwok-node-t9k-{i}" for i in range(EXTRA_NODES)]
    with crds_installed(full_cluster, (T9K_CRD,)):
        for name in names:
            full_cluster.ensure(fake_node(name))
        try:
            yield
        finally:
            for name in names:
                full_cluster.request("DELETE", f"/api/v1/nodes/{name}")


@pytest.fixture
async def t9k_full(full_cluster: Any, full_namespace: str) -> AsyncIterator[T9kCluster]:
    async with api_client(full_cluster, qps=50, burst=100) as kube:
        yield T9kCluster(kube, full_namespace)


def size(obj: Any) -> int:
    return len(json.dumps(obj, separators=(",", ":")))


async def test_a_t9k_job_past_the_old_status_limit_runs_with_its_status_written(
    full_cluster: Any, full_namespace: str, room: None, t9k_full: T9kCluster
) -> None:
    t9k = t9k_full
    async with controllers(full_cluster, full_namespace, T9kMPIJobController) as start:
        await start(qps=200, burst=400)
        started = time.monotonic()
        await t9k.create(t9k_job("big", WORKERS))
        status = await t9k.wait_phase("Running", "big", within=300)
        took = time.monotonic() - started
        job = await t9k.job("big")
        written = size(status)
        pods = await t9k.pods("big")
        parsed = set_defaults(parse(job))
        old = size(
            [task_of(t, i, pods.get(n)).model_dump(by_alias=True) for t, i, n in slots(parsed)]
        )
        print(
            f"{WORKERS} workers Running in {took:.1f}s; status {written} B "
            f"(tasks {len(status['tasks'])}); the old tasks alone {old} B"
        )
        assert status["aggregate"]["running"] == WORKERS + 1
        assert status["tasks"] == []  # every pod runs
        assert written < BUDGET
        assert old > BUDGET
        # A worker that stops running shows in tasks (the one listed) at once.
        await t9k.set_phase("big-worker-1234", "Failed", exit_code=3)
        failed = await t9k.wait_phase("Failed", "big", within=60)
        listed = [(t["replicaType"], t["replicaIndex"]) for t in failed["tasks"]]
        assert ("worker", 1234) in listed
        assert len(listed) <= MAX_TASKS
        assert size(failed) < BUDGET
        await t9k.kube.delete(t9k.resource, t9k.ns, "big")
        await t9k.kube.request("DELETE", f"/api/v1/namespaces/{t9k.ns}/pods")

        async def gone() -> bool:
            return not await t9k.pods("big")

        await eventually(gone, within=180, interval=1, what="the big job's pods collected")
