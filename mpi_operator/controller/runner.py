"""Workers that drain a rate-limited queue into a sync function.

The loop of client-go's sample-controller: a key is handled by one worker at a
time (the queue guarantees it), a failed sync is retried with per-key
exponential backoff (``add_rate_limited``) and a successful one clears that
backoff (``forget``). Shared by the Kubeflow and the T9k controllers, it knows
nothing of either.

A sync may return its finish (:data:`Finish`): the status write that ends it and
the child writes that follow the written decision. The worker then takes the next
key while the finish runs, at most one finish per worker, and the key is done,
forgotten or requeued once its finish is. When fifty new jobs arrive at once, a
worker that waited for each job's status write would start the next job's creates
one round trip later, fifty times over.

While the API server cannot be reached, a key's backoff stops growing at
:data:`UNAVAILABLE_RETRY_CAP` (and at its own cap for a
:class:`~mpi_operator.client.errors.RetrySoonError`), so every job catches up soon
after the server (or the missing CRD) is back, even if no informer event arrives.

The workers are supervised. An exception that escapes a key's bookkeeping (the
queue's or the failure record's, outside the sync's own ``try``) would otherwise end
its worker task silently, one worker fewer for good while ``/healthz`` stays green.
It is logged with the MPIJob key, the key is requeued with backoff and marked done
(as after a failed sync), and the worker takes the next key. A worker that cannot go
on at all (its task ended: the queue itself failed) is reported by
:meth:`SyncRunner.health_failures`, which fails ``/healthz``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator

import structlog
from prometheus_client import Histogram

from mpi_operator.client import RateLimitingQueue
from mpi_operator.client.errors import (
    NETWORK_ERRORS,
    ApiError,
    RetrySoonError,
    is_server_unavailable,
)
from mpi_operator.controller.core.failures import SyncFailures

log = structlog.get_logger(__name__)

#: Longest wait before retrying a key whose sync failed because the server was away.
UNAVAILABLE_RETRY_CAP = 10.0

#: What a sync leaves to run once it has returned (its status write, then the child
#: writes the written decision asks for); raising from it fails the sync.
Finish = Callable[[], Awaitable[None]]
Sync = Callable[[str], Awaitable[Finish | None]]


class SyncRunner:
    def __init__(
        self,
        name: str,
        queue: RateLimitingQueue[str],
        sync: Sync,
        duration: Histogram,
        failures: SyncFailures | None = None,
        *,
        threadiness: int,
    ) -> None:
        self.name = name
        self.threadiness = max(threadiness, 1)
        self.queue = queue
        self._sync = sync
        self._duration = duration
        self.failures = failures
        self._workers: list[asyncio.Task[None]] = []
        self._stopping = False
        self._finishes: set[asyncio.Task[None]] = set()
        # At most one finish per worker in flight: a worker whose last finish is still
        # running waits for it before taking another key's.
        self._finish_slots = asyncio.Semaphore(self.threadiness)

    def start(self) -> None:
        for i in range(self.threadiness):
            task = asyncio.create_task(self._run_worker(), name=f"{self.name}-worker-{i}")
            self._workers.append(task)

    @property
    def workers(self) -> int:
        return len(self._workers)

    @property
    def finishes_in_flight(self) -> int:
        """Keys whose sync has returned and whose finish still runs."""
        return len(self._finishes)

    async def _run_worker(self) -> None:
        while await self.process_next_work_item():
            pass

    def health_failures(self) -> list[str]:
        """The workers that ended while the runner was not stopping (why, if known);
        empty while every worker takes keys."""
        failures = []
        for task in self._workers:
            if not task.done() or self._stopping:
                continue
            err = None if task.cancelled() else task.exception()
            failures.append(
                f"{task.get_name()} ended: {err!r}" if err else f"{task.get_name()} ended"
            )
        return failures

    async def process_next_work_item(self) -> bool:
        key, shutdown = await self.queue.get()
        if shutdown or key is None:
            return False
        try:
            await self._process(key)
        except Exception:
            # Not expected (_done marks the key done on every path): the worker goes on.
            self._requeue_after_crash(key)
        return True

    async def _process(self, key: str) -> None:
        started = time.perf_counter()
        error: Exception | None = None
        finish: Finish | None = None
        try:
            with self._done_if_cancelled(key):
                finish = await self._sync(key)
        except Exception as err:
            error = err
        if error is None and finish is not None:
            # Deviation: a client-go worker finishes the whole sync before its next Get;
            # ours takes the next key while this one's finish (its status write) runs,
            # the key still processing until the finish is done. The finish is a task
            # of its own from here on, so stop() sees it even if this worker is
            # cancelled while it waits for the finish's slot.
            slot = asyncio.Event()
            task = asyncio.create_task(self._run_finish(key, started, finish, slot))
            self._finishes.add(task)
            task.add_done_callback(self._finishes.discard)
            await slot.wait()
        else:
            self._done(key, started, error)

    async def _run_finish(
        self, key: str, started: float, finish: Finish, slot: asyncio.Event
    ) -> None:
        error: Exception | None = None
        try:
            with self._done_if_cancelled(key, finishing=True):
                async with self._finish_slots:
                    slot.set()
                    await finish()
        except Exception as err:
            error = err
        finally:
            slot.set()
        try:
            self._done(key, started, error)
        except Exception:
            self._requeue_after_crash(key)

    @contextlib.contextmanager
    def _done_if_cancelled(self, key: str, *, finishing: bool = False) -> Iterator[None]:
        """A cancelled worker or finish still marks its key done, so that stop() leaves
        no key processing. A cancelled finish is logged: its status write is left to
        the key's next sync (this process's or the next leader's)."""
        try:
            yield
        except asyncio.CancelledError:
            if finishing:
                log.warning(
                    "status write cancelled; the next sync of the key writes it",
                    controller=self.name,
                    mpijob=key,
                )
            self.queue.done(key)
            raise

    def _done(self, key: str, started: float, error: Exception | None) -> None:
        """Forgets the key's backoff after a success, or requeues it with backoff after
        a failure; the key is done either way, exactly once. Bookkeeping that fails
        counts as a failed sync: logged with the key, which is requeued with backoff."""
        result = "success" if error is None else "error"
        try:
            if error is None:
                self.queue.forget(key)
                if self.failures is not None:
                    self.failures.clear(key)
            else:
                self._report_failure(key, error)
        except Exception:
            result = "error"
            self._requeue_after_crash(key)
        try:
            self.queue.done(key)
        except Exception:
            log.exception("could not mark the key done", controller=self.name, mpijob=key)
        elapsed = time.perf_counter() - started
        self._duration.labels(result).observe(elapsed)
        log.debug(
            "synced", controller=self.name, mpijob=key, seconds=round(elapsed, 4), result=result
        )

    def _requeue_after_crash(self, key: str) -> None:
        """Something failed outside the key's sync: logged with the key, which is
        requeued with backoff, so that neither the worker nor the key is lost."""
        log.exception(
            "sync worker failed outside the sync; key requeued", controller=self.name, mpijob=key
        )
        try:
            self.queue.add_rate_limited(key)
        except Exception:
            log.exception("could not requeue the key", controller=self.name, mpijob=key)

    def _report_failure(self, key: str, err: Exception) -> None:
        self._requeue_failed(key, err)
        if self.failures is not None:
            self.failures.failed(key, err)
        expected = isinstance(err, (ApiError, RetrySoonError, *NETWORK_ERRORS))
        (log.warning if expected else log.error)(
            "sync failed; retrying",
            controller=self.name,
            mpijob=key,
            error=str(err)[:500] or repr(err),
            requeues=self.queue.num_requeues(key),
            # The error itself, not True: this runs after its except block has ended.
            exc_info=False if expected else err,
        )

    def _requeue_failed(self, key: str, err: Exception) -> None:
        if is_server_unavailable(err):
            cap = UNAVAILABLE_RETRY_CAP
        elif isinstance(err, RetrySoonError):
            cap = err.retry_cap
        else:
            self.queue.add_rate_limited(key)
            return
        # Deviation: client-go lets every failure double the key's delay up to 1000 s; a
        # key that failed during an API server outage (or while a CRD was missing) would
        # then sleep long after it.
        delay = self.queue.rate_limiter.when(key)
        self.queue.add_after(key, min(delay, cap))

    async def stop(self, drain_seconds: float) -> None:
        """Lets in-flight syncs and their finishes end (up to ``drain_seconds``), then
        cancels the rest. The workers end first, so no finish begins after the finishes
        are counted: each one is awaited, and one cut off by the deadline is cancelled
        and logged, never left running past stop()."""
        self._stopping = True
        self.queue.shut_down()
        if not self._workers:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + drain_seconds
        _, pending = await asyncio.wait(self._workers, timeout=drain_seconds)
        for task in pending:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        running = set(self._finishes)
        if running:
            _, late = await asyncio.wait(running, timeout=max(deadline - loop.time(), 0.0))
            for task in late:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
