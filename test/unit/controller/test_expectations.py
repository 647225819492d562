"""Creation expectations: created pods count as existing until the cache shows them."""

from __future__ import annotations

from mpi_operator.client.clock import FakeClock
from mpi_operator.controller.expectations import CreationExpectations


def test_created_names_stay_pending_until_cached() -> None:
    exp = CreationExpectations(FakeClock())
    exp.expect("ns/job", ["job-worker-0", "job-worker-1"])
    assert exp.unobserved("ns/job", ["job-worker-0"]) == {"job-worker-1"}
    assert exp.unobserved("ns/job", ["job-worker-1"]) == set()
    assert exp.unobserved("ns/job", []) == set()  # seen once is enough


def test_pending_names_expire() -> None:
    clock = FakeClock()
    exp = CreationExpectations(clock, ttl=300)
    exp.expect("ns/job", ["job-worker-0"])
    clock.step(301)
    assert exp.unobserved("ns/job", []) == set()


def test_jobs_are_kept_apart() -> None:
    exp = CreationExpectations(FakeClock())
    exp.expect("ns/a", ["a-worker-0"])
    assert exp.unobserved("ns/b", []) == set()
    exp.forget("ns/a")
    assert exp.unobserved("ns/a", []) == set()
