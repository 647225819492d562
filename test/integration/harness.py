"""What the controller and T9k integration tests share: an API client, an in-process
controller started per test (and always stopped), and a view of one namespace's job
objects and Events, and a spy on its pod deletes. (A unique module name: several test folders have a conftest.py.)"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry

from devcluster.polling import eventually
from mpi_operator.client import EVENTS, PODS, KubeClient, Resource
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

    async def start(*, qps: float = 0, burst: int = 0, **options: Any) -> C:
        """``qps``/``burst``: the controller client's (0: client-go's default 5/10)."""
        client = await KubeClient.from_kubeconfig(cluster.kubeconfig, qps=qps, burst=burst)
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


Check = Callable[[], Awaitable[bool]]


async def seconds_until(check: Check, within: float, what: str) -> float:
    started = time.monotonic()
    await eventually(check, within=within, what=what, interval=0.2)
    return time.monotonic() - started


async def small_beside_big(
    create: Callable[[Obj], Awaitable[Obj]],
    jobs: tuple[Obj, Obj],
    fanning_out: Check,
    small_pods: Check,
    small_status: Check,
) -> tuple[float, float]:
    """Creates the big job of ``jobs``, then, once it is ``fanning_out``, the small one;
    returns how long the small one's pods took, and then its status."""
    big, small = jobs
    await create(big)
    await eventually(fanning_out, within=60, what="the big job's fan-out", interval=0.2)
    await create(small)
    pods = await seconds_until(small_pods, 30, "the small job's pods")
    return pods, await seconds_until(small_status, 30, "the small job's status")


async def delete_when_added(kube: KubeClient, namespace: str, pod: str) -> asyncio.Task[str]:
    """A task that deletes pod ``pod`` within milliseconds of its creation (from now on)
    and returns the deleted pod's uid."""
    rv = (await kube.list(PODS, namespace, limit=1))["metadata"]["resourceVersion"]

    async def run() -> str:
        async for event in kube.watch(PODS, namespace, resource_version=rv, timeout_seconds=60):
            assert isinstance(event, dict)
            meta = event["object"]["metadata"]
            if event["type"] == "ADDED" and meta["name"] == pod:
                await kube.delete(PODS, namespace, pod)
                return str(meta["uid"])
        raise AssertionError(f"pod {pod} was not created")

    return asyncio.create_task(run())


def record_pod_deletes(controller: Any) -> list[Obj]:
    """Spies on the pod deletes of a controller of either kind: each delete by name is
    recorded as ``{"name": ...}``, each collection delete as its namespace and selectors."""
    client: Any = controller.syncer.ctx.client
    deletes: list[Obj] = []
    real_delete, real_collection = client.delete, client.delete_collection

    async def delete(resource: Any, namespace: str | None, name: str, **kw: Any) -> Obj:
        if resource is PODS:
            deletes.append({"name": name})
        result: Obj = await real_delete(resource, namespace, name, **kw)
        return result

    async def delete_collection(resource: Any, namespace: str, **kw: Any) -> None:
        if resource is PODS:
            deletes.append({"namespace": namespace, **kw})
        await real_collection(resource, namespace, **kw)

    client.delete = delete
    client.delete_collection = delete_collection
    return deletes
