"""Injectable clocks.

Everything in the client package that measures time or waits (work queues,
rate limiters, the event recorder, leader election, reflector backoff) takes a
:class:`Clock`. Production code uses :class:`RealClock`, which reads
``time.monotonic`` for durations and expiry decisions and the wall clock only
for timestamps written to the API server. Tests use :class:`FakeClock`, whose
time only moves when the test calls :meth:`FakeClock.step`, so timing-dependent
behaviour is deterministic.

Timers are expressed as ``call_later`` callbacks rather than tasks sleeping in
a loop: a fake clock can then fire exactly the timers that are due, in order,
without racing the event loop.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards; for durations only."""
        ...

    def now(self) -> datetime:
        """Timezone-aware wall-clock time; for timestamps sent to the server."""
        ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` on the event loop after ``delay`` seconds."""
        ...

    async def sleep(self, delay: float) -> None: ...


class RealClock:
    """The production clock, backed by the running event loop."""

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(_with_slack(delay), callback)

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(_with_slack(delay))


#: uvloop runs timers on whole milliseconds of a cached loop time, so one can fire up to
#: about 2 ms before ``time.monotonic()`` reaches its deadline; a timer set for a
#: deadline is set this much later, so that whoever it wakes finds the deadline passed.
TIMER_SLACK = 0.002


def _with_slack(delay: float) -> float:
    return delay + TIMER_SLACK if delay > 0 else 0.0


class _FakeTimer:
    __slots__ = ("callback", "cancelled", "deadline")

    def __init__(self, deadline: float, callback: Callable[[], None]) -> None:
        self.deadline = deadline
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that advances only when told to.

    ``step`` fires due timers synchronously, in deadline order; sleeping
    coroutines are woken through futures, so a test should yield to the loop
    (``await clock.settle()``) after stepping to let them run.
    """

    def __init__(self, start: float = 1000.0, wall: datetime | None = None) -> None:
        self._mono = start
        self._wall = wall or datetime(2026, 1, 1, tzinfo=UTC)
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._seq = itertools.count()

    def monotonic(self) -> float:
        return self._mono

    def now(self) -> datetime:
        return self._wall

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _FakeTimer(self._mono + max(delay, 0.0), callback)
        heapq.heappush(self._timers, (timer.deadline, next(self._seq), timer))
        return timer

    async def sleep(self, delay: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not fut.done():
                fut.set_result(None)

        handle = self.call_later(delay, wake)
        try:
            await fut
        finally:
            handle.cancel()

    def step(self, seconds: float) -> None:
        """Advance both clocks by ``seconds`` and fire every timer now due."""
        target = self._mono + seconds
        while self._timers and self._timers[0][0] <= target:
            deadline, _, timer = heapq.heappop(self._timers)
            self._wall += timedelta(seconds=deadline - self._mono)
            self._mono = deadline
            if not timer.cancelled:
                timer.callback()
        self._wall += timedelta(seconds=target - self._mono)
        self._mono = target

    @staticmethod
    async def settle(rounds: int = 10) -> None:
        """Yield to the event loop a few times so woken coroutines can run."""
        for _ in range(rounds):
            await asyncio.sleep(0)
