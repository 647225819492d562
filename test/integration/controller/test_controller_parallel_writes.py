"""Independent writes of one sync go out together, not one after another."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from controller_harness import Cluster, Obj, StartOperator, mpijob
from harness import record_pod_deletes

from mpi_operator.client import CONFIGMAPS, SECRETS, SERVICES


class Overlap:
    """Wraps one client method: each call to ``resources`` waits, 2 s at most, until
    ``expected`` calls are in flight together; ``peak`` is the most seen at once."""

    def __init__(self, controller: Any, method: str, resources: tuple[Any, ...], expected: int):
        self.expected = expected
        self.peak = self.in_flight = 0
        self.names: list[str] = []
        self._together = asyncio.Event()
        client = controller.syncer.ctx.client
        real = getattr(client, method)

        async def wrapped(resource: Any, namespace: str | None, body: Any, **kw: Any) -> Obj:
            if resource in resources:
                name = body if isinstance(body, str) else body["metadata"]["name"]
                await self._arrive(name)
            return await real(resource, namespace, body, **kw)

        setattr(client, method, wrapped)

    async def _arrive(self, name: str) -> None:
        self.names.append(name)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        if self.in_flight >= self.expected:
            self._together.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._together.wait(), 2)
        self.in_flight -= 1


async def test_service_config_map_and_secret_are_created_together(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    controller = await start_operator()
    creates = Overlap(controller, "create", (SERVICES, CONFIGMAPS, SECRETS), expected=3)
    await cluster.create(mpijob())
    await cluster.wait_workers(2)
    assert sorted(creates.names) == ["job", "job-config", "job-ssh"]
    assert creates.peak == 3


async def test_finished_jobs_workers_are_deleted_in_one_request(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    """All of a finished job's workers go in one delete of the pods collection, selected
    by the job's worker labels; no pod is deleted by name."""
    controller = await start_operator()
    deletes = record_pod_deletes(controller)
    await cluster.create(mpijob(workers=4, runPolicy={"cleanPodPolicy": "All"}))
    workers = await cluster.wait_workers(4)
    await cluster.set_pods_running(workers)
    await cluster.finish_launcher(succeeded=True)
    await cluster.wait_condition("Succeeded")
    await cluster.wait_workers(0)
    assert deletes == [
        {
            "namespace": cluster.ns,
            "label_selector": "training.kubeflow.org/operator-name=mpi-operator,"
            "training.kubeflow.org/job-name=job,training.kubeflow.org/job-role=worker",
            "field_selector": None,
        }
    ]
