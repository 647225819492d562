"""The work queue's fair turns: a key its own sync sends back to continue waits behind
the keys that have not had their turn, and a worker is kept for those."""

from __future__ import annotations

import asyncio
import random

from prometheus_client import CollectorRegistry

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.workqueue import FRESH_RUN, RateLimitingQueue


def new_queue(max_continuing: int | None = None) -> RateLimitingQueue[str]:
    q: RateLimitingQueue[str] = RateLimitingQueue(
        "fair", clock=FakeClock(), registry=CollectorRegistry()
    )
    q.max_continuing = max_continuing
    return q


async def take(q: RateLimitingQueue[str]) -> str:
    item, shutdown = await asyncio.wait_for(q.get(), 1.0)
    assert not shutdown and item is not None
    return item


async def test_a_continuation_waits_behind_keys_added_after_it() -> None:
    q = new_queue()
    q.add("big")
    assert await take(q) == "big"
    q.add_continuation("big")  # its sync left pods for later
    q.add("a")
    q.done("big")
    q.add("b")
    assert [await take(q) for _ in range(3)] == ["a", "b", "big"]


async def test_the_syncs_word_wins_over_an_event_that_came_during_it() -> None:
    q = new_queue()
    q.add("big")
    await take(q)
    q.add("big")  # a pod event while it syncs
    q.add_continuation("big")
    q.done("big")
    q.add("new")
    assert [await take(q) for _ in range(2)] == ["new", "big"]


async def test_a_waiting_key_keeps_its_place_and_is_queued_once() -> None:
    q = new_queue()
    q.add("a")
    q.add_continuation("a")  # already waiting for a turn: no second entry, no demotion
    q.add("b")
    assert len(q) == 2
    assert [await take(q) for _ in range(2)] == ["a", "b"]
    q.add_continuation("c")
    q.add("c")  # an event for a waiting continuation: it stays one
    assert len(q) == 1


async def test_a_worker_is_kept_for_keys_that_have_not_had_their_turn() -> None:
    q = new_queue(max_continuing=1)
    for key in ("b1", "b2"):
        q.add_continuation(key)
    assert await take(q) == "b1"
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0.01)
    assert not second.done(), "b2 must wait while b1 holds the continuing worker"
    q.add("small")
    assert await asyncio.wait_for(second, 1.0) == ("small", False)
    q.done("small")
    third = asyncio.create_task(q.get())
    await asyncio.sleep(0.01)
    assert not third.done()
    q.done("b1")  # the continuing worker is free again
    assert await asyncio.wait_for(third, 1.0) == ("b2", False)


async def test_a_continuation_goes_after_a_run_of_other_keys() -> None:
    """No starvation: while new keys keep coming, every FRESH_RUN of them lets one
    continuation go."""
    q = new_queue(max_continuing=1)
    q.add_continuation("big")
    for i in range(2 * FRESH_RUN + 2):
        q.add(f"k{i}")
    order = []
    for _ in range(FRESH_RUN + 1):
        order.append(await take(q))
        q.done(order[-1])
    assert order == [*(f"k{i}" for i in range(FRESH_RUN)), "big"]


async def test_after_shut_down_every_queued_key_is_handed_out() -> None:
    q = new_queue(max_continuing=1)
    q.add_continuation("b1")
    q.add_continuation("b2")
    assert await take(q) == "b1"
    q.shut_down()
    assert await take(q) == "b2", "the limit is lifted: the workers drain the queue"
    assert await asyncio.wait_for(q.get(), 1.0) == (None, True)


async def test_concurrent_workers_never_hold_the_same_key_with_continuations() -> None:
    q = new_queue(max_continuing=1)
    rng = random.Random(7)
    holding: set[str] = set()
    violations: list[str] = []
    handled = 0

    async def worker() -> None:
        nonlocal handled
        while True:
            item, shutdown = await q.get()
            if shutdown or item is None:
                return
            if item in holding:
                violations.append(item)
            holding.add(item)
            await asyncio.sleep(0)
            if rng.random() < 0.5:
                q.add_continuation(item)
            q.add(f"k{rng.randrange(10)}")
            holding.discard(item)
            q.done(item)
            handled += 1
            if handled >= 300:
                q.shut_down()

    for i in range(10):
        q.add(f"k{i}")
    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(3))), 10)
    assert not violations
    assert handled >= 300
