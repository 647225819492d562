"""Workers that drain a rate-limited queue into a sync function.

The loop of client-go's sample-controller: a key is handled by one worker at a
time (the queue guarantees it), a failed sync is retried with per-key
exponential backoff (``add_rate_limited``) and a successful one clears that
backoff (``forget``). Shared by the Kubeflow and the T9k controllers.

While the API server cannot be reached, a key's backoff stops growing at
:data:`UNAVAILABLE_RETRY_CAP`, so every job catches up within that long of the
server coming back, even if no informer event arrives for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

import structlog
from prometheus_client import Histogram

from mpi_operator.client import RateLimitingQueue
from mpi_operator.client.errors import NETWORK_ERRORS, ApiError, is_server_unavailable
from mpi_operator.controller.core.missing_crd import RETRY_CAP as MISSING_CRD_RETRY_CAP
from mpi_operator.controller.core.missing_crd import MissingCRDError
from mpi_operator.controller.failures import SyncFailures

log = structlog.get_logger(__name__)

#: Longest wait before retrying a key whose sync failed because the server was away.
UNAVAILABLE_RETRY_CAP = 10.0


class SyncRunner:
    def __init__(
        self,
        name: str,
        queue: RateLimitingQueue[str],
        sync: Callable[[str], Awaitable[None]],
        duration: Histogram,
        failures: SyncFailures | None = None,
    ) -> None:
        self.name = name
        self.queue = queue
        self._sync = sync
        self._duration = duration
        self.failures = failures
        self._workers: list[asyncio.Task[None]] = []

    def start(self, threadiness: int) -> None:
        for i in range(max(threadiness, 1)):
            task = asyncio.create_task(self._run_worker(), name=f"{self.name}-worker-{i}")
            self._workers.append(task)

    @property
    def workers(self) -> int:
        return len(self._workers)

    async def _run_worker(self) -> None:
        while await self.process_next_work_item():
            pass

    async def process_next_work_item(self) -> bool:
        key, shutdown = await self.queue.get()
        if shutdown or key is None:
            return False
        started = time.perf_counter()
        result = "success"
        try:
            await self._sync(key)
            self.queue.forget(key)
            if self.failures is not None:
                self.failures.forget(key)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            result = "error"
            self._requeue_failed(key, err)
            if self.failures is not None:
                self.failures.failed(key, err)
            expected = isinstance(err, (ApiError, MissingCRDError, *NETWORK_ERRORS))
            (log.warning if expected else log.error)(
                "sync failed; retrying",
                controller=self.name,
                mpijob=key,
                error=str(err)[:500] or repr(err),
                requeues=self.queue.num_requeues(key),
                exc_info=not expected,
            )
        finally:
            self.queue.done(key)
            elapsed = time.perf_counter() - started
            self._duration.labels(result).observe(elapsed)
        log.debug(
            "synced", controller=self.name, mpijob=key, seconds=round(elapsed, 4), result=result
        )
        return True

    def _requeue_failed(self, key: str, err: Exception) -> None:
        if is_server_unavailable(err):
            cap = UNAVAILABLE_RETRY_CAP
        elif isinstance(err, MissingCRDError):
            cap = MISSING_CRD_RETRY_CAP
        else:
            self.queue.add_rate_limited(key)
            return
        # Deviation: client-go lets every failure double the key's delay up to 1000 s; a
        # key that failed during an API server outage (or while a CRD was missing) would
        # then sleep long after it.
        delay = self.queue.rate_limiter.when(key)
        self.queue.add_after(key, min(delay, cap))

    async def stop(self, drain_seconds: float) -> None:
        """Lets in-flight syncs finish (up to ``drain_seconds``), then cancels the rest."""
        self.queue.shut_down()
        if not self._workers:
            return
        _, pending = await asyncio.wait(self._workers, timeout=drain_seconds)
        for task in pending:
            task.cancel()
        for task in self._workers:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
