"""SyncRunner's retry policy, with a fake clock: how long a failed key waits."""

from __future__ import annotations

import aiohttp
import pytest
from prometheus_client import CollectorRegistry, Histogram

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.errors import ApiError, is_server_unavailable
from mpi_operator.client.workqueue import RateLimitingQueue
from mpi_operator.controller.runner import UNAVAILABLE_RETRY_CAP, SyncRunner

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
