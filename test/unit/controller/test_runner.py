"""SyncRunner's retry policy, with a fake clock: how long a failed key waits."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import aiohttp
import pytest
import structlog.testing
from prometheus_client import CollectorRegistry, Histogram

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.errors import ApiError, is_server_unavailable
from mpi_operator.client.workqueue import RateLimitingQueue
from mpi_operator.controller.runner import (
    UNAVAILABLE_RETRY_CAP,
    Finish,
    SyncRunner,
)

KEY = "ns/job"


class Failing:
    """A sync that raises ``err`` until told otherwise."""

    def __init__(self, err: Exception | None) -> None:
        self.err = err
        self.calls = 0

    async def __call__(self, key: str) -> None:
        self.calls += 1
        if self.err is not None:
            raise self.err


def new_runner(sync: Failing) -> tuple[SyncRunner, RateLimitingQueue[str], FakeClock]:
    clock = FakeClock()
    reg = CollectorRegistry()
    queue: RateLimitingQueue[str] = RateLimitingQueue("t", clock=clock, registry=reg)
    duration = Histogram("sync_seconds", "", ["result"], registry=reg)
    return SyncRunner("t", queue, sync, duration, threadiness=1), queue, clock


async def fail_times(
    runner: SyncRunner, queue: RateLimitingQueue[str], clock: FakeClock, n: int
) -> None:
    """Lets the key fail ``n`` times, stepping the clock to each retry."""
    queue.add(KEY)
    for _ in range(n):
        while len(queue) == 0:
            clock.step(1.0)
        assert await runner.process_next_work_item()


def seconds_until_retry(
    queue: RateLimitingQueue[str], clock: FakeClock, limit: float = 5000.0
) -> float:
    waited = 0.0
    while len(queue) == 0 and waited < limit:
        clock.step(0.5)
        waited += 0.5
    return waited


@pytest.mark.parametrize(
    "err",
    [
        aiohttp.ClientConnectionError("Cannot connect to host 127.0.0.1:6443"),
        ConnectionRefusedError(111, "Connection refused"),
        TimeoutError(),
        ApiError(503, {"reason": "ServiceUnavailable", "message": "not ready"}),
        ApiError(429, {"reason": "TooManyRequests", "message": "storage is (re)initializing"}),
        ApiError(504, {"reason": "Timeout"}),
    ],
    ids=["connect", "refused", "timeout", "503", "429", "504"],
)
async def test_outage_failures_retry_within_the_cap_however_often_they_failed(
    err: Exception,
) -> None:
    sync = Failing(err)
    runner, queue, clock = new_runner(sync)
    await fail_times(runner, queue, clock, 16)
    assert queue.num_requeues(KEY) == 16, "each failure still counts"
    waited = seconds_until_retry(queue, clock)
    assert 0 < waited <= UNAVAILABLE_RETRY_CAP


@pytest.mark.parametrize(
    "err",
    [
        ApiError(409, {"reason": "Conflict", "message": "the object has been modified"}),
        ApiError(422, {"reason": "Invalid", "message": "spec.x: Invalid value"}),
        ApiError(500, {"reason": "InternalError"}),
        ValueError("a bug"),
    ],
    ids=["409", "422", "500", "bug"],
)
async def test_other_failures_keep_the_exponential_backoff(err: Exception) -> None:
    sync = Failing(err)
    runner, queue, clock = new_runner(sync)
    await fail_times(runner, queue, clock, 14)
    # The 14th failure waits 5 ms doubled 13 times: 40.96 s.
    waited = seconds_until_retry(queue, clock)
    assert 40.5 <= waited <= 41.5


async def test_a_success_after_an_outage_clears_the_backoff() -> None:
    sync = Failing(aiohttp.ClientConnectionError("down"))
    runner, queue, clock = new_runner(sync)
    await fail_times(runner, queue, clock, 5)
    sync.err = None
    assert seconds_until_retry(queue, clock) <= UNAVAILABLE_RETRY_CAP
    assert await runner.process_next_work_item()
    assert queue.num_requeues(KEY) == 0
    assert sync.calls == 6


@pytest.mark.parametrize(
    ("err", "unavailable"),
    [
        (ApiError(0, reason="no answer"), True),
        (ApiError(429, {}), True),
        (ApiError(502, {}), True),
        (ApiError(503, {}), True),
        (ApiError(504, {}), True),
        (ApiError(500, {}), False),
        (ApiError(404, {}), False),
        (ApiError(409, {}), False),
        (aiohttp.ServerDisconnectedError(), True),
        (OSError("reset"), True),
        (ValueError("x"), False),
    ],
)
def test_server_unavailable_predicate(err: Exception, unavailable: bool) -> None:
    assert is_server_unavailable(err) is unavailable


# ------------------------ test runner finish ------------------------
#
# A sync's finish (what it returns): the worker goes on to the next key while the
# finish of the last one runs; the key stays processing until the finish is done; a
# failed finish is retried like a failed sync.


A, B = "ns/a", "ns/b"
DEADLINE = 5.0


class FinishingSync:
    """A sync that records its keys and hands off a finish that waits for ``release``
    (for the keys in ``held``) and then raises ``finish_error`` if set."""

    def __init__(self, held: set[str]) -> None:
        self.held = held
        self.release = asyncio.Event()
        self.synced: list[str] = []
        self.finishes_done: list[str] = []
        self.finish_error: Exception | None = None

    async def __call__(self, key: str) -> Finish:
        self.synced.append(key)

        async def finish() -> None:
            if key in self.held:
                await self.release.wait()
            if self.finish_error is not None:
                raise self.finish_error
            self.finishes_done.append(key)

        return finish


class Runner:
    def __init__(self, sync: Callable[[str], Awaitable[Finish | None]]) -> None:
        self.clock = FakeClock()
        self.registry = CollectorRegistry()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            "t", clock=self.clock, registry=self.registry
        )
        duration = Histogram("sync_seconds", "", ["result"], registry=self.registry)
        self.runner = SyncRunner("t", self.queue, sync, duration, threadiness=1)

    def syncs(self, result: str) -> float:
        value = self.registry.get_sample_value("sync_seconds_count", {"result": result})
        return value or 0.0


def finishing_runner(sync: FinishingSync) -> tuple[SyncRunner, RateLimitingQueue[str], Runner]:
    r = Runner(sync)
    return r.runner, r.queue, r


async def until(predicate: Callable[[], bool], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def test_the_worker_syncs_the_next_key_while_the_last_ones_finish_runs() -> None:
    sync = FinishingSync(held={A})
    runner, queue, _ = finishing_runner(sync)
    queue.add(A)
    # Returns while A's finish waits (a runner that awaited the finish would time out).
    assert await asyncio.wait_for(runner.process_next_work_item(), DEADLINE)
    assert sync.synced == [A] and sync.finishes_done == []
    assert runner.finishes_in_flight == 1
    queue.add(B)
    # B has no held finish; its own finish waits for a slot only while A's holds it, so
    # run the worker as a task and let A's finish go once B has been synced.
    worker = asyncio.create_task(runner.process_next_work_item())
    await until(lambda: sync.synced == [A, B], "B synced while A's finish runs")
    assert sync.finishes_done == []
    sync.release.set()
    assert await asyncio.wait_for(worker, DEADLINE)
    await until(lambda: runner.finishes_in_flight == 0, "both finishes done")
    assert sync.finishes_done == [A, B]


async def test_a_key_whose_finish_runs_is_not_synced_again_until_the_finish_is_done() -> None:
    sync = FinishingSync(held={A})
    runner, queue, _ = finishing_runner(sync)
    queue.add(A)
    assert await asyncio.wait_for(runner.process_next_work_item(), DEADLINE)
    queue.add(A)  # an event for A while its finish still runs
    assert len(queue) == 0, "A is still processing: it waits, as in client-go's queue"
    sync.release.set()
    await until(lambda: len(queue) == 1, "A queued again once its finish is done")
    assert sync.finishes_done == [A]


async def test_a_failed_finish_is_retried_with_backoff_as_a_failed_sync() -> None:
    sync = FinishingSync(held=set())
    sync.finish_error = ApiError(500, {"reason": "InternalError"})
    runner, queue, r = finishing_runner(sync)
    queue.add(A)
    assert await runner.process_next_work_item()
    await until(lambda: runner.finishes_in_flight == 0, "the finish done")
    assert queue.num_requeues(A) == 1
    assert (r.syncs("error"), r.syncs("success")) == (1, 0)
    sync.finish_error = None
    r.clock.step(1.0)
    await until(lambda: len(queue) == 1, "A retried after its backoff")
    assert await runner.process_next_work_item()
    await until(lambda: runner.finishes_in_flight == 0, "the second finish done")
    assert queue.num_requeues(A) == 0, "a finish that succeeds clears the backoff"
    assert r.syncs("success") == 1
    assert sync.finishes_done == [A]


@pytest.mark.parametrize("drain", [DEADLINE, 0.05])
async def test_stop_lets_a_running_finish_finish_within_the_drain_time(drain: float) -> None:
    sync = FinishingSync(held={A})
    runner, queue, _ = finishing_runner(sync)
    runner.start()
    queue.add(A)
    await until(lambda: runner.finishes_in_flight == 1, "A's finish running")
    if drain == DEADLINE:
        asyncio.get_running_loop().call_later(0.1, sync.release.set)
    await runner.stop(drain)
    assert runner.finishes_in_flight == 0
    assert sync.finishes_done == ([A] if drain == DEADLINE else [])


@pytest.mark.parametrize("in_finish", [False, True], ids=["sync", "finish"])
async def test_an_unexpected_failure_is_logged_with_its_traceback(in_finish: bool) -> None:
    """A bug (not an API or network error) is logged with the exception itself, so its
    traceback is rendered, whether the sync or its finish raised it."""
    bug = ValueError("a bug")

    async def sync(key: str) -> Finish | None:
        async def finish() -> None:
            raise bug

        if not in_finish:
            raise bug
        return finish

    r = Runner(sync)
    r.queue.add(A)
    with structlog.testing.capture_logs() as logs:
        assert await r.runner.process_next_work_item()
        await until(lambda: r.runner.finishes_in_flight == 0, "the finish done")
    (failed,) = [e for e in logs if e["event"] == "sync failed; retrying"]
    assert failed["exc_info"] is bug
    assert failed["log_level"] == "error"


async def test_stop_cancels_no_finish_silently_not_even_one_still_waiting_for_its_slot() -> None:
    """One finish slot: A's finish holds it past the drain, and B's sync has handed off its
    finish, which waits for the slot. Before, stop cancelled the worker waiting for the
    slot and B's finish was dropped without a word; now each finish cut off by the drain
    is cancelled and logged by key (the key's next sync, here or on the next leader,
    writes that status), the keys are done, and nothing runs on after stop."""
    sync = FinishingSync(held={A})
    runner, queue, _ = finishing_runner(sync)
    runner.start()
    queue.add(A)
    queue.add(B)
    await until(lambda: sync.synced == [A, B], "B synced while A's finish holds the slot")
    with structlog.testing.capture_logs() as logs:
        await runner.stop(0.05)
    cancelled = [e["mpijob"] for e in logs if e["event"].startswith("status write cancelled")]
    assert sorted(cancelled) == [A, B]
    assert sync.finishes_done == []
    assert runner.finishes_in_flight == 0
    # Every key is done: a drain of the queue finds nothing processing.
    await asyncio.wait_for(queue.shut_down_with_drain(), 1.0)
    assert asyncio.all_tasks() == {asyncio.current_task()}, "no finish runs on after stop"


async def test_stop_lets_a_finish_waiting_for_its_slot_finish_within_the_drain() -> None:
    sync = FinishingSync(held={A})
    runner, queue, _ = finishing_runner(sync)
    runner.start()
    queue.add(A)
    queue.add(B)
    await until(lambda: sync.synced == [A, B], "B synced while A's finish holds the slot")
    asyncio.get_running_loop().call_later(0.1, sync.release.set)
    await runner.stop(DEADLINE)
    assert sync.finishes_done == [A, B]
