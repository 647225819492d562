"""Rate limiters: a token bucket and the work-queue retry limiters.

:class:`TokenBucket` follows golang.org/x/time/rate's reservation model, which
is what both client-go's client-side throttle (``flowcontrol``) and the
work-queue ``BucketRateLimiter`` use: tokens refill continuously at ``qps`` up
to ``burst``; taking a token may drive the balance negative, and the caller
then waits ``-tokens / qps`` seconds. Reservations are therefore granted in
FIFO order without a lock, which suits a single-threaded event loop.

The work-queue limiters answer "how long until this item may be retried":

* :class:`ItemExponentialFailureRateLimiter` - ``base * 2**failures``, capped.
* :class:`BucketRateLimiter` - the overall token bucket, shared by all items.
* :class:`MaxOfRateLimiter` - the slowest answer of several limiters.
* :func:`default_controller_rate_limiter` - client-go's
  DefaultControllerRateLimiter: max(per-item 5 ms..1000 s, 10 qps / 100 burst).

:class:`FairTokenBucket` is the API client's throttle: the same budget as a
:class:`TokenBucket`, but handed out in turns between request flows (see there).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import OrderedDict, deque
from collections.abc import Hashable, Iterator
from contextvars import ContextVar
from typing import Protocol

from mpi_operator.client.clock import Clock, RealClock, TimerHandle

_ROUNDING = 1e-9


class TokenBucket:
    """x/time/rate-style limiter: ``qps`` tokens per second, at most ``burst``."""

    def __init__(self, qps: float, burst: int, clock: Clock | None = None) -> None:
        if qps <= 0:
            raise ValueError("qps must be positive")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock or RealClock()
        self._tokens = float(burst)
        self._last = self._clock.monotonic()

    def _advance(self, now: float) -> float:
        if now < self._last:
            # A monotonic clock never does this, but stay safe with fakes.
            self._last = now
        elapsed = now - self._last
        return min(float(self.burst), self._tokens + elapsed * self.qps)

    def reserve(self) -> float:
        """Take one token now; return how many seconds the caller must wait."""
        now = self._clock.monotonic()
        tokens = self._advance(now) - 1.0
        self._tokens = tokens
        self._last = now
        return 0.0 if tokens >= 0 else -tokens / self.qps

    def try_accept(self) -> bool:
        """Take a token only if one is available right now."""
        now = self._clock.monotonic()
        tokens = self._advance(now)
        if tokens < 1.0:
            return False
        self._tokens = tokens - 1.0
        self._last = now
        return True

    async def wait(self) -> None:
        """Block (asynchronously) until a token is ours, like flowcontrol's Accept."""
        delay = self.reserve()
        if delay > 0:
            await self._clock.sleep(delay)

    def tokens(self) -> float:
        return self._advance(self._clock.monotonic())

    def take_whole(self) -> bool:
        """:meth:`try_accept`, counting a hair short of a token (refill rounding) as one."""
        if self.tokens() < 1.0 - _ROUNDING:
            return False
        self.reserve()
        return True

    def until_next(self) -> float:
        """Seconds until :meth:`take_whole` succeeds (0 when it would now)."""
        tokens = self.tokens()
        # Aims at a whole token, so that the timer never fires a hair too early.
        return 0.0 if tokens >= 1.0 - _ROUNDING else (1.0 - tokens) / self.qps


#: The flow a request belongs to: a sync sets its MPIJob's key, everything else
#: (informers' lists and watches, the event recorder) shares the background flow "".
_FLOW: ContextVar[str] = ContextVar("mpi_operator_request_flow", default="")


@contextlib.contextmanager
def request_flow(name: str) -> Iterator[None]:
    """Requests made inside (tasks started inside included) belong to flow ``name``."""
    token = _FLOW.set(name)
    try:
        yield
    finally:
        _FLOW.reset(token)


def current_flow() -> str:
    return _FLOW.get()


class FlowQueues:
    """Waiters by request flow, served in turns: round robin over the flows, first come
    first served within one. A waiter is a future; one cancelled while it waits is
    skipped."""

    def __init__(self) -> None:
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def add(self, flow: str) -> asyncio.Future[None]:
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(flow, deque()).append(turn)
        return turn

    def queued(self) -> dict[str, int]:
        """Live waiters, by flow."""
        return {f: sum(not t.done() for t in q) for f, q in self._waiting.items()}

    def has_live(self) -> bool:
        """Whether a waiter is there to serve (drops the cancelled ones ahead of it)."""
        while self._waiting:
            flow, queue = next(iter(self._waiting.items()))
            while queue and queue[0].done():
                queue.popleft()  # cancelled while waiting
            if queue:
                return True
            del self._waiting[flow]
        return False

    def wake_next(self) -> None:
        """Serves the next flow's first waiter (after :meth:`has_live` said one is
        there); that flow's turn comes again after the others'."""
        flow, queue = next(iter(self._waiting.items()))
        queue.popleft().set_result(None)
        if queue:
            self._waiting.move_to_end(flow)
        else:
            del self._waiting[flow]


class FairTokenBucket:
    """The API client's throttle: ``qps``/``burst`` in total, taken in turns by flows.

    Deviation from client-go, whose flowcontrol limiter is one FIFO bucket shared by all
    requests of a rest.Config and reserves ahead without bound: there, one job's 10,000
    creates make every later request (another job's first pod, a status or event write,
    a watch restart) wait 100 s at 100 qps. Here a token is handed out only once it is
    there (the reservation horizon is one token), and waiting requests queue per flow
    (:func:`request_flow`: one per MPIJob being synced, one for the background): each
    token that comes due goes to the next flow in round-robin order. A request of a flow
    with nothing queued therefore waits at most one token per busy flow (plus a ``tick``),
    whatever the backlog of the others, and the total rate is still ``qps`` with bursts
    of ``burst``.

    ``tick``: while requests wait, tokens are handed out at most every ``tick`` seconds,
    all those due at once (at 100 qps and a 50 ms tick, 5 requests every 50 ms instead of
    one every 10 ms). The rate is the same; each waiting request may go up to ``tick``
    later (and the timer's slack). Deviation: fewer timer and socket wakeups, each costly here (see
    :data:`DISPATCH_TICK`); 0 hands each token out the moment it is due.
    """

    def __init__(
        self, qps: float, burst: int, clock: Clock | None = None, *, tick: float = 0.0
    ) -> None:
        self._clock = clock or RealClock()
        self._bucket = TokenBucket(qps, burst, self._clock)
        self.qps, self.burst = self._bucket.qps, self._bucket.burst
        # At most half the time the bucket takes to fill all but one token: a dispatch
        # leaves up to a token's fraction, and a timer fires late by its slack; tokens
        # beyond ``burst`` would be lost (no tick with a burst of 1).
        self.tick = min(tick, (self.burst - 1) / self.qps / 2)
        self._waiting = FlowQueues()
        self._timer: TimerHandle | None = None
        self._dispatched_at = -math.inf

    async def wait(self, flow: str | None = None) -> None:
        """Returns once a token is this request's (``flow`` defaults to the context's)."""
        if not self._waiting and self._bucket.take_whole():
            return
        turn = self._waiting.add(current_flow() if flow is None else flow)
        self._schedule()
        await turn  # a cancelled waiter is skipped by _dispatch

    def queued(self) -> dict[str, int]:
        """Requests waiting, by flow."""
        return self._waiting.queued()

    def _schedule(self) -> None:
        if self._timer is None and self._waiting:
            delay = self._bucket.until_next()
            if self.tick > 0:
                next_tick = self._dispatched_at + self.tick - self._clock.monotonic()
                delay = max(delay, next_tick)
            self._timer = self._clock.call_later(delay, self._dispatch)

    def _dispatch(self) -> None:
        self._timer = None
        self._dispatched_at = self._clock.monotonic()
        while self._waiting.has_live() and self._bucket.take_whole():
            self._waiting.wake_next()
        self._schedule()


#: The API client's :attr:`FairTokenBucket.tick`. A create sent alone cost about 0.6-0.7 ms
#: of CPU here against 0.4-0.5 ms for one of 5 sent together (``python -m bench.hot_path``'s
#: paced creates): each timer and socket wakeup of the event loop costs about 0.1 ms.
DISPATCH_TICK = 0.05


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Seconds to wait before ``item`` may be processed again."""
        ...

    def forget(self, item: Hashable) -> None: ...

    def num_requeues(self, item: Hashable) -> int: ...


class ItemExponentialFailureRateLimiter:
    """Per-item backoff: ``base_delay * 2**(failures)``, at most ``max_delay``."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        # Guard against float overflow for items that failed very often.
        if exp > 1023:
            return self.max_delay
        backoff = self.base_delay * math.pow(2, exp)
        return min(backoff, self.max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """Overall retry rate, shared by all items; it never tracks requeues."""

    def __init__(self, bucket: TokenBucket) -> None:
        self.bucket = bucket

    def when(self, item: Hashable) -> float:
        return self.bucket.reserve()

    def forget(self, item: Hashable) -> None:
        return None

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """Ask every limiter and use the longest delay (each records the attempt)."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("at least one limiter is required")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(
    clock: Clock | None = None,
    *,
    base_delay: float = 0.005,
    max_delay: float = 1000.0,
    qps: float = 10.0,
    burst: int = 100,
) -> MaxOfRateLimiter:
    """client-go's DefaultControllerRateLimiter, with its parameters exposed."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(base_delay, max_delay),
        BucketRateLimiter(TokenBucket(qps, burst, clock)),
    )
