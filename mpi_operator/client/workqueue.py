"""Work queues with client-go's semantics, for asyncio.

Three layers, as in k8s.io/client-go/util/workqueue:

* :class:`WorkQueue` - FIFO with a *dirty* set (items waiting to be handed
  out) and a *processing* set (items a worker holds). Adding an item that is
  already dirty is a no-op; adding an item that is being processed marks it
  dirty but does not queue it, and ``done`` re-queues it exactly once. So one
  key is never held by two workers at once, and no update is lost.
* :class:`DelayingQueue` - ``add_after``: the item enters the queue once the
  delay has passed; if it is already waiting, the earlier deadline wins.
* :class:`RateLimitingQueue` - ``add_rate_limited`` / ``forget`` /
  ``num_requeues`` on top of a :class:`~mpi_operator.client.ratelimit.RateLimiter`.

Deviation, for fair turns across jobs: a key its own sync sends back to continue
(``add_continuation``: a 20,000-worker job after 500 creates) waits behind the keys
that have not had their turn, and at most ``max_continuing`` workers hold such keys at
once, so a worker stays free for a new job however many big ones fan out or scale
down. Against starvation, one continuation goes after :data:`FRESH_RUN` other keys
handed out in a row. client-go's queue is one FIFO; its guarantees stay: a key is held
by one worker at a time, is queued at most once (its *dirty* mark decides where), and
delayed and rate-limited adds are plain adds once due.

Workers are coroutines: ``item, shutdown = await queue.get()``. Waiting uses
plain futures rather than asyncio.Condition because waking a waiter must be
possible from synchronous code (``add`` is called from informer handlers).
Timers for delayed items go through the injected clock, so tests control time.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry

from mpi_operator.client.clock import Clock, RealClock, TimerHandle
from mpi_operator.client.ratelimit import RateLimiter, default_controller_rate_limiter
from mpi_operator.client.workqueue_metrics import QueueMetrics

T = TypeVar("T", bound=Hashable)

#: While continuations wait, at most this many other keys are handed out in a row
#: before one of them (if a worker may hold one).
FRESH_RUN = 8


class WorkQueue(Generic[T]):
    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        metrics: bool = True,
    ) -> None:
        self.name = name
        self._clock: Clock = clock or RealClock()
        self._queue: deque[T] = deque()
        self._later: deque[T] = deque()
        """Continuations waiting: keys that had their turn and asked for another."""
        self._continuing: set[T] = set()
        """Dirty keys whose next turn is a continuation (in ``_later``, or to go there)."""
        self._held: set[T] = set()
        """Processing keys that were handed out as continuations."""
        self._fresh_run = 0
        self.max_continuing: int | None = None
        """Most workers that may hold continuations at once (None: no limit)."""
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._add_times: dict[T, float] = {}
        self._start_times: dict[T, float] = {}
        self._metrics: QueueMetrics | None = None
        if metrics and name:
            self._metrics = QueueMetrics(
                name, registry, self._unfinished_work_seconds, self._longest_running_seconds
            )

    # -- metrics helpers -------------------------------------------------
    def _unfinished_work_seconds(self) -> float:
        now = self._clock.monotonic()
        return sum(now - t for t in self._start_times.values())

    def _longest_running_seconds(self) -> float:
        if not self._start_times:
            return 0.0
        return self._clock.monotonic() - min(self._start_times.values())

    # -- signalling ------------------------------------------------------
    def _signal(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    def _broadcast(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
        self._wake_drainers()

    def _wake_drainers(self) -> None:
        for fut in self._drain_waiters:
            if not fut.done():
                fut.set_result(None)
        self._drain_waiters.clear()

    # -- public API ------------------------------------------------------
    def add(self, item: T) -> None:
        self._add(item, continuation=False)

    def add_continuation(self, item: T) -> None:
        """Adds ``item`` for another turn behind the keys that have not had theirs:
        for a sync that left work for later (see the module docstring)."""
        self._add(item, continuation=True)

    def _add(self, item: T, *, continuation: bool) -> None:
        if self._shutting_down:
            return
        if item in self._dirty:
            if continuation and item in self._processing:
                self._continuing.add(item)  # an event came meanwhile: the sync's word wins
            return  # already waiting: it keeps its place
        if self._metrics is not None:
            self._metrics.adds.inc()
            self._metrics.depth.inc()
        self._add_times.setdefault(item, self._clock.monotonic())
        self._dirty.add(item)
        if continuation:
            self._continuing.add(item)
        if item in self._processing:
            return
        (self._later if continuation else self._queue).append(item)
        self._signal()

    def __len__(self) -> int:
        return len(self._queue) + len(self._later)

    def continuing(self, item: T) -> bool:
        """Whether ``item`` was handed out as a continuation (and is still processing)."""
        return item in self._held

    def _may_continue(self) -> bool:
        limit = self.max_continuing
        return self._shutting_down or limit is None or len(self._held) < max(limit, 1)

    def _take(self) -> T | None:
        """The next key to hand out, or None if none may go now."""
        continuation = bool(self._later) and self._may_continue()
        if self._queue and not (continuation and self._fresh_run >= FRESH_RUN):
            self._fresh_run = self._fresh_run + 1 if self._later else 0
            return self._queue.popleft()
        if continuation:
            self._fresh_run = 0
            item = self._later.popleft()
            self._continuing.discard(item)
            self._held.add(item)
            return item
        return None

    async def get(self) -> tuple[T | None, bool]:
        """Wait for an item. Returns ``(item, False)``, or ``(None, True)``
        once the queue is shut down and empty."""
        while (item := self._take()) is None:
            if self._shutting_down:
                return None, True
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    # We were woken but will not take the item; pass it on.
                    self._signal()
                raise
        now = self._clock.monotonic()
        if self._metrics is not None:
            self._metrics.depth.dec()
            added = self._add_times.pop(item, None)
            if added is not None:
                self._metrics.latency.observe(now - added)
        else:
            self._add_times.pop(item, None)
        self._start_times[item] = now
        self._processing.add(item)
        self._dirty.discard(item)
        return item, False

    def done(self, item: T) -> None:
        """Mark ``item`` finished; if it was re-added meanwhile, queue it again."""
        started = self._start_times.pop(item, None)
        if self._metrics is not None and started is not None:
            self._metrics.work_duration.observe(self._clock.monotonic() - started)
        self._processing.discard(item)
        held = item in self._held
        self._held.discard(item)
        if item in self._dirty:
            (self._later if item in self._continuing else self._queue).append(item)
            self._signal()
        if held and self._later:
            self._signal()  # a worker may take a continuation now
        if not self._processing:
            self._wake_drainers()

    def shut_down(self) -> None:
        """Stop accepting items; workers get ``shutdown=True`` once it is empty."""
        self._drain = False
        self._shutting_down = True
        self._broadcast()

    async def shut_down_with_drain(self) -> None:
        """Shut down, then wait until every item handed out has been ``done``."""
        self._drain = True
        self._shutting_down = True
        self._broadcast()
        while self._processing and self._drain:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(fut)
            await fut

    def shutting_down(self) -> bool:
        return self._shutting_down


class DelayingQueue(WorkQueue[T]):
    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        metrics: bool = True,
    ) -> None:
        super().__init__(name, clock=clock, registry=registry, metrics=metrics)
        self._waiting: dict[T, tuple[float, TimerHandle]] = {}

    def add_after(self, item: T, delay: float) -> None:
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retries.inc()
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._clock.monotonic() + delay
        existing = self._waiting.get(item)
        if existing is not None:
            if existing[0] <= ready_at:
                return
            existing[1].cancel()

        def fire() -> None:
            entry = self._waiting.get(item)
            if entry is not None and entry[0] == ready_at:
                del self._waiting[item]
                self.add(item)

        self._waiting[item] = (ready_at, self._clock.call_later(delay, fire))

    def waiting(self) -> int:
        """Number of items whose delay has not yet elapsed."""
        return len(self._waiting)

    def _cancel_waiting(self) -> None:
        for _, handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()

    def shut_down(self) -> None:
        self._cancel_waiting()
        super().shut_down()

    async def shut_down_with_drain(self) -> None:
        self._cancel_waiting()
        await super().shut_down_with_drain()


class RateLimitingQueue(DelayingQueue[T]):
    def __init__(
        self,
        name: str = "",
        *,
        rate_limiter: RateLimiter | None = None,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        metrics: bool = True,
    ) -> None:
        super().__init__(name, clock=clock, registry=registry, metrics=metrics)
        self.rate_limiter: RateLimiter = rate_limiter or default_controller_rate_limiter(
            self._clock
        )

    def add_rate_limited(self, item: T) -> None:
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)
