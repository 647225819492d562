"""Rate limiters: token bucket and the work-queue retry limiters."""

from __future__ import annotations

import pytest

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    TokenBucket,
    default_controller_rate_limiter,
)


def test_bucket_grants_burst_immediately_then_spaces_at_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0, 0, 0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)


def test_bucket_refills_over_time_up_to_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=2, burst=4, clock=clock)
    for _ in range(4):
        bucket.reserve()
    clock.step(1)
    assert bucket.tokens() == pytest.approx(2)
    clock.step(100)
    assert bucket.tokens() == pytest.approx(4)


def test_try_accept_does_not_borrow_from_the_future() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=1, burst=1, clock=clock)
    assert bucket.try_accept()
    assert not bucket.try_accept()
    clock.step(1)
    assert bucket.try_accept()


async def test_wait_sleeps_on_the_injected_clock() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=1, burst=1, clock=clock)
    await bucket.wait()
    import asyncio

    waiter = asyncio.create_task(bucket.wait())
    await clock.settle()
    assert not waiter.done()
    clock.step(1)
    await clock.settle()
    assert waiter.done()


def test_item_exponential_doubles_from_base_and_caps_at_max() -> None:
    rl = ItemExponentialFailureRateLimiter(0.005, 1000)
    delays = [rl.when("a") for _ in range(20)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1000
    assert rl.num_requeues("a") == 20
    assert rl.when("b") == 0.005, "items back off independently"
    rl.forget("a")
    assert rl.when("a") == 0.005


def test_item_exponential_survives_absurd_failure_counts() -> None:
    rl = ItemExponentialFailureRateLimiter(0.005, 1000)
    for _ in range(2000):
        rl.when("a")
    assert rl.when("a") == 1000


def test_max_of_takes_the_slowest_answer() -> None:
    clock = FakeClock()
    rl = MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000),
        BucketRateLimiter(TokenBucket(1, 1, clock)),
    )
    assert rl.when("a") == 0.005
    assert rl.when("b") == pytest.approx(1.0)
    assert rl.num_requeues("a") == 1
    rl.forget("a")
    assert rl.num_requeues("a") == 0


def test_default_controller_rate_limiter_is_bucket_bound_after_burst() -> None:
    clock = FakeClock()
    rl = default_controller_rate_limiter(clock)
    delays = [rl.when(f"item-{i}") for i in range(101)]
    assert delays[:100] == [0.005] * 100
    assert delays[100] == pytest.approx(0.1)


def test_invalid_bucket_parameters_are_rejected() -> None:
    with pytest.raises(ValueError):
        TokenBucket(0, 1)
    with pytest.raises(ValueError):
        TokenBucket(1, 0)
