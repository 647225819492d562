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

The API client's throttle, built on :class:`TokenBucket`, is in
:mod:`~mpi_operator.client.fair_throttle`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Protocol

from mpi_operator.client.clock import Clock, RealClock

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
