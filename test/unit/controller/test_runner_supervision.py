"""Supervised sync workers: an exception outside a key's sync (in the queue's or the
failure record's bookkeeping) is logged with the key, the key is requeued with backoff
and done, and the worker goes on to the next key; a worker whose task ended fails the
health check."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import structlog.testing
from prometheus_client import CollectorRegistry, Histogram

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.workqueue import RateLimitingQueue
from mpi_operator.controller.runner import SyncRunner
from mpi_operator.server.http import SyncWorkersCheck

A, B = "ns/a", "ns/b"


class Syncs:
    def __init__(self) -> None:
        self.synced: list[str] = []

    async def __call__(self, key: str) -> None:
        self.synced.append(key)


def new_runner(sync: Syncs) -> tuple[SyncRunner, RateLimitingQueue[str], FakeClock]:
    clock = FakeClock()
    reg = CollectorRegistry()
    queue: RateLimitingQueue[str] = RateLimitingQueue("t", clock=clock, registry=reg)
    duration = Histogram("sync_seconds", "", ["result"], registry=reg)
    return SyncRunner("t", queue, sync, duration, threadiness=1), queue, clock


async def until(cond: Callable[[], bool], what: str) -> None:
    for _ in range(500):
        if cond():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never: {what}")


async def test_a_worker_goes_on_after_its_bookkeeping_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sync = Syncs()
    runner, queue, clock = new_runner(sync)
    real_forget = queue.forget
    broken = {A}

    def forget(key: str) -> None:
        if key in broken:
            broken.discard(key)
            raise RuntimeError("bookkeeping bug")
        real_forget(key)

    monkeypatch.setattr(queue, "forget", forget)
    runner.start()
    try:
        with structlog.testing.capture_logs() as logs:
            queue.add(A)
            queue.add(B)
            await until(lambda: sync.synced == [A, B], "the worker took B after A's failure")
        crashed = [e for e in logs if e["event"].startswith("sync worker failed outside")]
        assert [e["mpijob"] for e in crashed] == [A]
        assert crashed[0]["log_level"] == "error"
        assert runner.health_failures() == []
        # A was requeued with backoff, and done: it comes back once its delay is over.
        assert queue.num_requeues(A) == 1
        clock.step(1.0)
        await until(lambda: sync.synced == [A, B, A], "A synced again after its backoff")
    finally:
        await runner.stop(0.1)


async def test_a_failing_done_does_not_end_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    sync = Syncs()
    runner, queue, _ = new_runner(sync)
    real_done = queue.done
    calls: list[str] = []

    def done(key: str) -> None:
        calls.append(key)
        real_done(key)
        if len(calls) == 1:
            raise RuntimeError("metrics bug after the key was released")

    monkeypatch.setattr(queue, "done", done)
    runner.start()
    try:
        with structlog.testing.capture_logs() as logs:
            queue.add(A)
            await until(lambda: sync.synced == [A], "A synced")
            queue.add(B)
            await until(lambda: sync.synced == [A, B], "the worker took B")
        assert calls[:2] == [A, B]  # done once per key
        assert [e["mpijob"] for e in logs if e.get("log_level") == "error"] == [A]
        assert runner.health_failures() == []
    finally:
        await runner.stop(0.1)


async def test_a_dead_worker_fails_the_health_check(monkeypatch: pytest.MonkeyPatch) -> None:
    sync = Syncs()
    runner, queue, _ = new_runner(sync)

    async def broken_get() -> tuple[str | None, bool]:
        raise RuntimeError("queue bug")

    check = SyncWorkersCheck(runner.health_failures)
    runner.start()
    assert check.check() is None
    monkeypatch.setattr(queue, "get", broken_get)
    queue.add(A)  # wakes the worker, whose next get fails
    await until(lambda: all(t.done() for t in runner._workers), "the worker ended")
    reason = check.check()
    assert reason is not None and "t-worker-0 ended" in reason and "queue bug" in reason
    await runner.stop(0.1)
    assert runner.health_failures() == []  # a stopped runner's workers ended on purpose
