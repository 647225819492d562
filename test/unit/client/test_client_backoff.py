"""The reflector's reconnect backoff: exponential, jittered, capped, reset when quiet."""

from __future__ import annotations

import random

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.reflector import Backoff


def test_delays_double_with_jitter_and_never_pass_the_cap() -> None:
    clock = FakeClock()
    backoff = Backoff(clock, rng=random.Random(7))
    delays = [backoff.next() for _ in range(12)]
    bases = [min(0.8 * 2**i, 10.0) for i in range(12)]
    for delay, base in zip(delays, bases, strict=True):
        assert base <= delay <= min(2 * base, 10.0)
    assert max(delays) <= 10.0


def test_backoff_starts_over_after_a_quiet_period() -> None:
    clock = FakeClock()
    backoff = Backoff(clock, rng=random.Random(1), jitter=0.0)
    assert [backoff.next() for _ in range(3)] == [0.8, 1.6, 3.2]
    clock.step(121.0)
    assert backoff.next() == 0.8
