"""SyncFailures: when a failing key's error becomes a SyncFailed event, with a fake clock."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Histogram

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.errors import ApiError
from mpi_operator.client.workqueue import RateLimitingQueue
from mpi_operator.controller.core.crds import RETRY_CAP, MissingCRDError
from mpi_operator.controller.core.failures import (
    PERSISTENT_AFTER,
    REPEATS,
    REPORT_EVERY,
    SyncFailures,
)
from mpi_operator.controller.handlers import JobHandlers
from mpi_operator.controller.runner import SyncRunner

KEY = "ns/job"


KEY = "ns/job"
FORBIDDEN = ApiError(403, {"reason": "Forbidden", "message": "exceeded quota: q"})
CONFLICT = ApiError(409, {"reason": "Conflict", "message": "the object has been modified"})
THROTTLED = ApiError(429, {"reason": "TooManyRequests", "message": "slow down"})
NOT_SERVED = ApiError(404, "404 page not found\n", "Not Found")


class Reports:
    def __init__(self, exists: bool = True) -> None:
        self.exists = exists
        self.sent: list[tuple[str, str]] = []

    def __call__(self, key: str, message: str) -> bool:
        if self.exists:
            self.sent.append((key, message))
        return self.exists


def tracker(exists: bool = True) -> tuple[SyncFailures, Reports, FakeClock]:
    clock, reports = FakeClock(), Reports(exists)
    return SyncFailures(reports, clock), reports, clock


@pytest.mark.parametrize(
    ("err", "failures_before_report"),
    [(FORBIDDEN, REPEATS), (NOT_SERVED, REPEATS), (RuntimeError("boom"), REPEATS)],
)
def test_the_same_error_repeated_is_reported(err: Exception, failures_before_report: int) -> None:
    failures, reports, _ = tracker()
    for _ in range(failures_before_report - 1):
        failures.failed(KEY, err)
    assert reports.sent == []
    failures.failed(KEY, err)
    assert reports.sent == [(KEY, str(err))]


@pytest.mark.parametrize("err", [CONFLICT, THROTTLED, ConnectionResetError("reset")])
def test_transient_errors_count_only_by_duration(err: Exception) -> None:
    failures, reports, clock = tracker()
    for _ in range(20):
        failures.failed(KEY, err)
        clock.step(1.0)
    assert reports.sent == []
    clock.step(PERSISTENT_AFTER)
    failures.failed(KEY, err)
    assert reports.sent == [(KEY, str(err))]


def test_changing_errors_are_reported_once_they_last() -> None:
    failures, reports, clock = tracker()
    for i in range(10):
        failures.failed(KEY, RuntimeError(f"error {i}"))
        clock.step(PERSISTENT_AFTER / 10)
    failures.failed(KEY, RuntimeError("error 10"))
    assert reports.sent == [(KEY, "error 10")]


def test_a_lasting_error_is_reported_again_only_after_report_every() -> None:
    failures, reports, clock = tracker()
    for _ in range(REPEATS + 5):
        failures.failed(KEY, FORBIDDEN)
        clock.step(1.0)
    assert len(reports.sent) == 1
    clock.step(REPORT_EVERY)
    failures.failed(KEY, FORBIDDEN)
    assert len(reports.sent) == 2
    failures.failed(KEY, NOT_SERVED)  # a new message: reported once it repeats or lasts
    assert len(reports.sent) == 3  # lasting: the key has failed for longer than 30 s
    assert reports.sent[-1] == (KEY, str(NOT_SERVED))


def test_success_and_deletion_forget_the_key() -> None:
    failures, reports, _ = tracker()
    failures.failed(KEY, FORBIDDEN)
    failures.clear(KEY)
    for _ in range(REPEATS - 1):
        failures.failed(KEY, FORBIDDEN)
    assert reports.sent == [], "the count started again"
    deleted: list[str] = []
    JobHandlers(lambda key: None, deleted.append).on_delete(
        {"metadata": {"namespace": "ns", "name": "job"}}
    )
    assert deleted == [KEY]


def test_a_key_without_its_mpijob_is_forgotten() -> None:
    failures, _, _ = tracker(exists=False)
    for _ in range(REPEATS):
        failures.failed(KEY, FORBIDDEN)
    assert len(failures) == 0


class Scripted:
    def __init__(self, errors: list[Exception | None]) -> None:
        self.errors = errors

    async def __call__(self, key: str) -> None:
        err = self.errors.pop(0)
        if err is not None:
            raise err


async def test_the_runner_records_failures_and_forgets_on_success() -> None:
    clock, reports = FakeClock(), Reports()
    reg = CollectorRegistry()
    queue: RateLimitingQueue[str] = RateLimitingQueue("t", clock=clock, registry=reg)
    failures = SyncFailures(reports, clock)
    sync = Scripted([FORBIDDEN] * REPEATS + [None])
    runner = SyncRunner(
        "t", queue, sync, Histogram("d", "", ["result"], registry=reg), failures, threadiness=1
    )
    queue.add(KEY)
    for _ in range(REPEATS + 1):
        while len(queue) == 0:
            clock.step(0.5)
        assert await runner.process_next_work_item()
    assert reports.sent == [(KEY, str(FORBIDDEN))]
    assert failures.get(KEY) is None


async def test_a_missing_crd_is_retried_within_its_cap() -> None:
    clock = FakeClock()
    reg = CollectorRegistry()
    queue: RateLimitingQueue[str] = RateLimitingQueue("t", clock=clock, registry=reg)
    sync = Scripted([MissingCRDError("install it")] * 20)
    runner = SyncRunner(
        "t", queue, sync, Histogram("d", "", ["result"], registry=reg), threadiness=1
    )
    queue.add(KEY)
    for _ in range(20):
        waited = 0.0
        while len(queue) == 0:
            clock.step(0.5)
            waited += 0.5
        assert waited <= RETRY_CAP
        assert await runner.process_next_work_item()
