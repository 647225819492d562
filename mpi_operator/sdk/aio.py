"""The same clients for asyncio code: each call runs the synchronous client's in a
worker thread (``asyncio.to_thread``), so the event loop never blocks; ``wait`` polls
and is bounded by the caller (``async with asyncio.timeout(600): ...``)."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Generic

from mpi_operator.api import t9k, v2beta1

from .client import JobClient, MPIJobClient, Progress, T9kMPIJobClient
from .errors import JobFailedError
from .kinds import JobT
from .waiting import reporter

_END = object()


class AsyncJobClient(Generic[JobT]):
    """Wraps a synchronous :class:`JobClient`; the arguments are the same."""

    def __init__(self, sync: JobClient[JobT]) -> None:
        self.sync = sync

    async def create(
        self, job: JobT | Mapping[str, Any], *, namespace: str | None = None, dry_run: bool = False
    ) -> JobT:
        return await asyncio.to_thread(self.sync.create, job, namespace=namespace, dry_run=dry_run)

    async def create_from_yaml(self, path: str | Path, *, namespace: str | None = None) -> JobT:
        return await asyncio.to_thread(self.sync.create_from_yaml, path, namespace=namespace)

    async def get(self, name: str, namespace: str | None = None) -> JobT:
        return await asyncio.to_thread(self.sync.get, name, namespace)

    async def list(
        self, namespace: str | None = None, *, all_namespaces: bool = False
    ) -> list[JobT]:
        return await asyncio.to_thread(self.sync.list, namespace, all_namespaces=all_namespaces)

    async def wait(
        self,
        name: str,
        condition: str = "Succeeded",
        *,
        namespace: str | None = None,
        progress: Progress = False,
        interval: float = 2,
    ) -> JobT:
        """As :meth:`JobClient.wait`, reading the job every ``interval`` seconds; bound
        it with ``asyncio.timeout``."""
        sync, kind = self.sync, self.sync.kind
        target = kind.check_condition(condition)
        report = reporter(progress, kind.summary)
        while True:
            job = await asyncio.to_thread(sync.get, name, namespace)
            report(job)
            if kind.reached(job, target):
                return job
            if kind.failed(job):
                raise JobFailedError(f"{kind.kind} {job.namespace}/{name} failed", job)
            await asyncio.sleep(interval)

    async def logs(
        self, name: str, namespace: str | None = None, *, follow: bool = False
    ) -> AsyncIterator[str]:
        lines = self.sync.logs(name, namespace, follow=follow)
        while True:
            line = await asyncio.to_thread(next, lines, _END)
            if line is _END:
                return
            yield str(line)

    async def suspend(self, name: str, namespace: str | None = None) -> JobT:
        return await asyncio.to_thread(self.sync.suspend, name, namespace)

    async def resume(self, name: str, namespace: str | None = None) -> JobT:
        return await asyncio.to_thread(self.sync.resume, name, namespace)

    async def worker_logs(
        self, name: str, index: int = 0, namespace: str | None = None, *, follow: bool = False
    ) -> AsyncIterator[str]:
        lines = self.sync.worker_logs(name, index, namespace, follow=follow)
        while True:
            line = await asyncio.to_thread(next, lines, _END)
            if line is _END:
                return
            yield str(line)

    async def patch(
        self, name: str, patch: Mapping[str, Any], namespace: str | None = None
    ) -> JobT:
        return await asyncio.to_thread(self.sync.patch, name, patch, namespace)

    async def update(self, job: JobT | Mapping[str, Any], namespace: str | None = None) -> JobT:
        return await asyncio.to_thread(self.sync.update, job, namespace)

    async def pods(
        self, name: str, namespace: str | None = None, *, role: str | None = None
    ) -> builtins.list[Any]:
        return await asyncio.to_thread(self.sync.pods, name, namespace, role=role)

    async def all_worker_logs(self, name: str, namespace: str | None = None) -> dict[str, str]:
        return await asyncio.to_thread(self.sync.all_worker_logs, name, namespace)

    async def delete(self, name: str, namespace: str | None = None, *, wait: bool = False) -> None:
        await asyncio.to_thread(self.sync.delete, name, namespace, wait=wait)


class AsyncMPIJobClient(AsyncJobClient[v2beta1.MPIJob]):
    """Kubeflow MPIJobs for asyncio; arguments as :class:`MPIJobClient`'s."""

    def __init__(self, namespace: str | None = None, **kwargs: Any) -> None:
        super().__init__(MPIJobClient(namespace, **kwargs))


class AsyncT9kMPIJobClient(AsyncJobClient[t9k.MPIJob]):
    """T9k MPIJobs for asyncio; arguments as :class:`T9kMPIJobClient`'s."""

    def __init__(self, namespace: str | None = None, **kwargs: Any) -> None:
        super().__init__(T9kMPIJobClient(namespace, **kwargs))
