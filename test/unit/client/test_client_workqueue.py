"""Work queue behaviour, with a fake clock and a private metrics registry."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.ratelimit import ItemExponentialFailureRateLimiter
from mpi_operator.client.workqueue import DelayingQueue, RateLimitingQueue, WorkQueue


def metric(reg: CollectorRegistry, name: str, queue: str = "mpijob") -> float:
    value = reg.get_sample_value(name, {"name": queue})
    return 0.0 if value is None else value


def new_queue(clock: FakeClock | None = None) -> tuple[RateLimitingQueue[str], CollectorRegistry]:
    reg = CollectorRegistry()
    return RateLimitingQueue("mpijob", clock=clock or FakeClock(), registry=reg), reg


async def test_items_come_out_in_fifo_order_and_duplicates_collapse() -> None:
    q, _ = new_queue()
    for key in ["a", "b", "a", "c", "b"]:
        q.add(key)
    assert len(q) == 3
    got = [(await q.get())[0] for _ in range(3)]
    assert got == ["a", "b", "c"]


async def test_item_added_while_processing_is_requeued_once_after_done() -> None:
    q, _ = new_queue()
    q.add("a")
    item, _ = await q.get()
    q.add("a")
    q.add("a")
    assert len(q) == 0, "must not be handed to a second worker while processed"
    q.done(item)  # type: ignore[arg-type]
    assert len(q) == 1
    again, _ = await q.get()
    assert again == "a"
    q.done("a")
    assert len(q) == 0


async def test_concurrent_workers_never_hold_the_same_key() -> None:
    q, _ = new_queue()
    holding: set[str] = set()
    violations: list[str] = []
    processed = 0

    async def worker() -> None:
        nonlocal processed
        while True:
            item, shutdown = await q.get()
            if shutdown:
                return
            assert item is not None
            if item in holding:
                violations.append(item)
            holding.add(item)
            await asyncio.sleep(0)
            q.add(item if processed % 3 else "x")  # re-add while processing
            await asyncio.sleep(0)
            holding.discard(item)
            processed += 1
            q.done(item)
            if processed > 300:
                q.shut_down()

    for key in "abcdefg":
        q.add(key)
    await asyncio.gather(*(worker() for _ in range(4)))
    assert violations == []


async def test_get_blocks_until_an_item_is_added() -> None:
    q, _ = new_queue()
    task = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not task.done()
    q.add("a")
    assert await task == ("a", False)


async def test_shut_down_releases_waiting_workers_and_drops_new_adds() -> None:
    q, _ = new_queue()
    q.add("left-over")
    waiter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert await waiter == ("left-over", False)
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.shut_down()
    assert await second == (None, True)
    q.add("late")
    assert len(q) == 0
    assert q.shutting_down()


async def test_queued_items_are_still_handed_out_after_shutdown() -> None:
    q, _ = new_queue()
    q.add("a")
    q.shut_down()
    assert await q.get() == ("a", False)
    assert await q.get() == (None, True)


async def test_shut_down_with_drain_waits_for_items_in_flight() -> None:
    q, _ = new_queue()
    q.add("a")
    await q.get()
    drain = asyncio.create_task(q.shut_down_with_drain())
    await asyncio.sleep(0)
    assert not drain.done()
    q.done("a")
    await asyncio.wait_for(drain, 1)


async def test_cancelled_waiter_passes_its_wakeup_on() -> None:
    q, _ = new_queue()
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("a")
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(second, 1) == ("a", False)


async def test_add_after_enqueues_only_once_the_delay_elapsed() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue("d", clock=clock, registry=CollectorRegistry())
    q.add_after("a", 5)
    clock.step(4.9)
    assert len(q) == 0
    clock.step(0.1)
    assert len(q) == 1


async def test_add_after_keeps_the_earlier_deadline() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue("d", clock=clock, registry=CollectorRegistry())
    q.add_after("a", 10)
    q.add_after("a", 2)
    q.add_after("a", 7)
    clock.step(2)
    assert len(q) == 1
    await q.get()
    q.done("a")
    clock.step(20)
    assert len(q) == 0, "superseded timers must not fire"


async def test_add_after_with_non_positive_delay_adds_now() -> None:
    q, _ = new_queue()
    q.add_after("a", 0)
    assert len(q) == 1


async def test_shutdown_cancels_pending_delayed_items() -> None:
    clock = FakeClock()
    q, _ = new_queue(clock)
    q.add_after("a", 1)
    q.shut_down()
    clock.step(2)
    assert len(q) == 0


async def test_rate_limited_requeues_back_off_exponentially_until_forgotten() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(
        "rl",
        clock=clock,
        registry=CollectorRegistry(),
        rate_limiter=ItemExponentialFailureRateLimiter(0.005, 1000),
    )
    for expected in [0.005, 0.010, 0.020, 0.040]:
        q.add_rate_limited("a")
        clock.step(expected - 1e-6)
        assert len(q) == 0
        clock.step(2e-6)
        assert len(q) == 1
        await q.get()
        q.done("a")
    assert q.num_requeues("a") == 4
    q.forget("a")
    assert q.num_requeues("a") == 0


async def test_metrics_use_client_go_names_with_the_queue_name_label() -> None:
    clock = FakeClock()
    q, reg = new_queue(clock)
    q.add("a")
    q.add("b")
    assert metric(reg, "workqueue_adds_total") == 2
    assert metric(reg, "workqueue_depth") == 2
    clock.step(3)
    item, _ = await q.get()
    assert metric(reg, "workqueue_depth") == 1
    assert metric(reg, "workqueue_queue_duration_seconds_count") == 1
    assert metric(reg, "workqueue_queue_duration_seconds_sum") == pytest.approx(3)
    clock.step(2)
    assert metric(reg, "workqueue_unfinished_work_seconds") == pytest.approx(2)
    assert metric(reg, "workqueue_longest_running_processor_seconds") == pytest.approx(2)
    q.done(item)  # type: ignore[arg-type]
    assert metric(reg, "workqueue_work_duration_seconds_sum") == pytest.approx(2)
    assert metric(reg, "workqueue_unfinished_work_seconds") == 0
    q.add_rate_limited("c")
    assert metric(reg, "workqueue_retries_total") == 1


async def test_two_queues_can_share_one_registry() -> None:
    reg = CollectorRegistry()
    a: WorkQueue[str] = WorkQueue("one", registry=reg, clock=FakeClock())
    b: WorkQueue[str] = WorkQueue("two", registry=reg, clock=FakeClock())
    a.add("x")
    b.add("x")
    b.add("y")
    assert metric(reg, "workqueue_adds_total", "one") == 1
    assert metric(reg, "workqueue_adds_total", "two") == 2
