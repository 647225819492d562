"""What the controller and T9k integration tests share: an API client, an in-process
controller started per test (and always stopped), and a view of one namespace's job
objects and Events. (A unique module name: several test folders have a conftest.py.)"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry

from mpi_operator.client import EVENTS, KubeClient, Resource
from mpi_operator.controller.options import ControllerOptions
from mpi_operator.controller.queue_controller import QueueController

Obj = dict[str, Any]
C = TypeVar("C", bound=QueueController)


@asynccontextmanager
async def api_client(cluster: Any, qps: float = 0, burst: int = 0) -> AsyncIterator[KubeClient]:
    """A client of the test cluster (``qps`` 0: client-go's default 5/10)."""
    async with await KubeClient.from_kubeconfig(cluster.kubeconfig, qps=qps, burst=burst) as c:
        yield c


@asynccontextmanager
async def controllers(
    cluster: Any, namespace: str, kind: Callable[..., C]
) -> AsyncIterator[Callable[..., Awaitable[C]]]:
    """A function starting ``kind`` controllers that watch ``namespace``, each with its
    own client and metrics registry; every one is stopped on exit, whatever happened."""
    running: list[tuple[C, KubeClient]] = []

    async def start(**options: Any) -> C:
        client = await KubeClient.from_kubeconfig(cluster.kubeconfig, qps=0, burst=0)
        controller = kind(
            client,
            ControllerOptions(namespace=namespace, **options),
            registry=CollectorRegistry(),
        )
        running.append((controller, client))
        await controller.start(sync_timeout=30)
        return controller

    try:
        yield start
    finally:
        for controller, client in running:
            await controller.stop(drain_seconds=2)
            await client.close()


class JobObjects:
    """Reads and pokes the MPIJobs (of ``resource``) and Events of one namespace."""

    def __init__(self, kube: KubeClient, namespace: str, resource: Resource) -> None:
        self.kube = kube
        self.ns = namespace
        self.resource = resource

    async def create(self, obj: Obj) -> Obj:
        created: Obj = await self.kube.create(self.resource, self.ns, obj)
        return created

    async def job(self, name: str = "job") -> Obj:
        got: Obj = await self.kube.get(self.resource, self.ns, name)
        return got

    async def events(self, name: str = "job") -> list[tuple[str, str, str]]:
        """(type, reason, message) of the Events about MPIJob ``name``."""
        items = (await self.kube.list(EVENTS, self.ns))["items"]
        return [
            (e["type"], e["reason"], e["message"])
            for e in items
            if e["involvedObject"].get("name") == name
            and e["involvedObject"].get("kind") == "MPIJob"
        ]
