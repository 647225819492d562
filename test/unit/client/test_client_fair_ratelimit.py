"""The API client's throttle: one budget, handed out in turns between request flows."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from mpi_operator.client.clock import TIMER_SLACK, FakeClock, TimerHandle
from mpi_operator.client.ratelimit import FairTokenBucket, current_flow, request_flow


async def _start(
    bucket: FairTokenBucket, flow: str, n: int, log: list[str]
) -> list[asyncio.Task[None]]:
    async def one(i: int) -> None:
        await bucket.wait(flow)
        log.append(f"{flow}{i}")

    tasks = [asyncio.create_task(one(i)) for i in range(n)]
    await FakeClock.settle()
    return tasks


async def _run_for(clock: FakeClock, seconds: float, step: float = 0.01) -> None:
    for _ in range(round(seconds / step)):
        clock.step(step + 1e-7)  # a hair more: sums of float steps fall short
        await clock.settle(3)


async def test_burst_is_immediate_then_qps() -> None:
    clock = FakeClock()
    bucket = FairTokenBucket(qps=10, burst=3, clock=clock)
    log: list[str] = []
    tasks = await _start(bucket, "a", 5, log)
    assert log == ["a0", "a1", "a2"]
    await _run_for(clock, 0.1)
    assert log == ["a0", "a1", "a2", "a3"]
    await _run_for(clock, 0.1)
    assert len(log) == 5
    await asyncio.gather(*tasks)


@pytest.mark.parametrize(
    ("backlog", "qps"),
    [(32_768, 100.0), (10_000, 20.0), (500, 5.0)],
)
async def test_a_backlog_does_not_delay_another_flows_request(backlog: int, qps: float) -> None:
    """The issue's case: a 32,768-pod batch at 100 qps made any other request wait
    ~326 s (client-go's FIFO reservation). Here it waits for one turn."""
    clock = FakeClock()
    bucket = FairTokenBucket(qps=qps, burst=1, clock=clock)
    log: list[str] = []
    big = await _start(bucket, "big", backlog, log)
    small = await _start(bucket, "small", 1, log)
    turns = 0
    while "small0" not in log:
        clock.step(1 / qps + 1e-7)
        turns += 1
        await clock.settle(3)
    assert turns <= 2  # one token for "big", the next for "small"
    assert bucket.queued()["big"] >= backlog - 3
    for task in [*big, *small]:
        task.cancel()


async def test_turns_go_round_robin_between_flows() -> None:
    clock = FakeClock()
    bucket = FairTokenBucket(qps=1, burst=1, clock=clock)
    log: list[str] = []
    tasks = await _start(bucket, "a", 4, log)  # a0 takes the burst
    tasks += await _start(bucket, "b", 2, log)
    tasks += await _start(bucket, "", 1, log)
    await _run_for(clock, 6, step=1)
    assert log == ["a0", "a1", "b0", "0", "a2", "b1", "a3"]
    await asyncio.gather(*tasks)


async def test_total_rate_stays_qps_across_flows() -> None:
    clock = FakeClock()
    bucket = FairTokenBucket(qps=50, burst=10, clock=clock)
    log: list[str] = []
    tasks = []
    for flow in ("a", "b", "c"):
        tasks += await _start(bucket, flow, 100, log)
    assert len(log) == 10  # the burst
    await _run_for(clock, 2.0)
    assert len(log) == pytest.approx(10 + 100, abs=1)
    for task in tasks:
        task.cancel()


async def test_cancelled_waiters_give_their_turn_away() -> None:
    clock = FakeClock()
    bucket = FairTokenBucket(qps=1, burst=1, clock=clock)
    log: list[str] = []
    await _start(bucket, "x", 1, log)
    doomed = await _start(bucket, "a", 3, log)
    later = await _start(bucket, "b", 1, log)
    for task in doomed:
        task.cancel()
    await clock.settle()
    await _run_for(clock, 1, step=1)
    assert log == ["x0", "b0"]
    assert bucket.queued() == {}
    await asyncio.gather(*later)


async def test_flow_comes_from_the_context_and_reaches_child_tasks() -> None:
    clock = FakeClock()
    bucket = FairTokenBucket(qps=1, burst=1, clock=clock)
    await bucket.wait()  # the burst
    seen: list[str] = []

    async def request() -> None:
        seen.append(current_flow())
        await bucket.wait()

    with request_flow("ns/job"):
        task = asyncio.gather(request(), request())
    await clock.settle()
    assert seen == ["ns/job", "ns/job"]
    assert bucket.queued() == {"ns/job": 2}
    assert current_flow() == ""
    await _run_for(clock, 2, step=1)
    await task


async def test_a_tick_hands_out_every_token_due_at_once_at_the_same_rate() -> None:
    clock = FakeClock()
    bucket = FairTokenBucket(qps=100, burst=20, clock=clock, tick=0.05)
    log: list[str] = []
    tasks = await _start(bucket, "a", 32, log)
    assert len(log) == 20  # the burst
    await _run_for(clock, 0.01)
    assert len(log) == 21  # the first token after a pause is not held back
    await _run_for(clock, 0.04)
    assert len(log) == 21  # the next ones wait for the tick...
    await _run_for(clock, 0.01)
    assert len(log) == 26  # ...and go together: the 5 tokens of 50 ms
    await _run_for(clock, 0.05)
    assert len(log) == 31
    await _run_for(clock, 0.05)
    assert len(log) == 32
    await asyncio.gather(*tasks)


class _LateClock(FakeClock):
    """Timers fire late by the real clock's slack (``TIMER_SLACK``)."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        return super().call_later(delay + TIMER_SLACK if delay > 0 else 0.0, callback)


async def _served_in_3_s(burst: int, tick: float) -> int:
    clock = _LateClock()
    bucket = FairTokenBucket(qps=100, burst=burst, clock=clock, tick=tick)
    log: list[str] = []
    tasks = await _start(bucket, "a", burst + 400, log)
    await _run_for(clock, 3.0, step=0.001)
    for task in tasks:
        task.cancel()
    return len(log) - burst


@pytest.mark.parametrize(("burst", "tick"), [(1, 0.0), (2, 0.005), (5, 0.02), (11, 0.05)])
async def test_a_tick_never_loses_tokens_to_a_full_bucket(burst: int, tick: float) -> None:
    """A dispatch leaves a token's fraction in the bucket and its timer fires late (by
    the real clock's slack): a tick as long as the bucket takes to fill would lose
    tokens (with a burst of 5, 4 a second). It is cut to half the time the bucket takes
    to fill all but one token, and serves as many as no tick does, but for the tokens
    of the last tick, not yet handed out."""
    assert FairTokenBucket(qps=100, burst=burst, tick=0.05).tick == pytest.approx(tick)
    served = await _served_in_3_s(burst, 0.05)
    last_tick = tick * 100 + 1
    assert served >= await _served_in_3_s(burst, 0.0) - last_tick
    if burst > 1:  # a bucket of 1 loses the slack's share with or without a tick
        assert served >= 300 - last_tick - 1


async def test_without_a_tick_each_token_goes_when_due() -> None:
    clock = FakeClock()
    bucket = FairTokenBucket(qps=100, burst=1, clock=clock)
    log: list[str] = []
    tasks = await _start(bucket, "a", 4, log)
    for expected in (2, 3, 4):
        await _run_for(clock, 0.01)
        assert len(log) == expected
    await asyncio.gather(*tasks)


async def test_a_tick_keeps_the_turns_between_flows() -> None:
    clock = FakeClock()
    bucket = FairTokenBucket(qps=100, burst=20, clock=clock, tick=0.05)
    log: list[str] = []
    tasks = await _start(bucket, "big", 70, log)
    await _run_for(clock, 0.02)
    before = len(log)
    tasks += await _start(bucket, "small", 1, log)
    await _run_for(clock, 0.05)
    # Served in the first tick after it came, one of the first two of that tick.
    assert "small0" in log[before : before + 2]
    for task in tasks:
        task.cancel()
