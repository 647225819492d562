"""Creation expectations: created pods count as existing until the cache shows them."""

from __future__ import annotations

from mpi_operator.client.clock import FakeClock
from mpi_operator.controller.core.state import CreationExpectations, DeletionExpectations


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
    exp.clear("ns/a")
    assert exp.unobserved("ns/a", []) == set()


def test_an_observed_add_or_delete_ends_the_flight() -> None:
    """A pod created and deleted between two syncs is not in the cache at the next
    sync: the informer's events must end its flight, or it is not recreated for 300 s."""
    exp = CreationExpectations(FakeClock())
    exp.expect("ns/job", ["job-worker-0", "job-worker-1"])
    exp.observed("ns/job", "job-worker-0")
    exp.observed("ns/other", "job-worker-1")  # another job's pod of that name
    assert exp.unobserved("ns/job", []) == {"job-worker-1"}
    exp.observed("ns/job", "job-worker-1")
    assert exp.keys() == []
    exp.observed("ns/job", "job-worker-1")  # again: nothing to do
    assert exp.keys() == []


def test_sent_deletes_are_pending_per_job_until_they_age_out() -> None:
    deletions = DeletionExpectations(ttl=300)
    deletions.expect("ns/a", ["u1", "u2"], now=0)
    deletions.expect("ns/b", ["u3"], now=100)
    assert deletions.pending("ns/a", now=300) == {"u1", "u2"}
    assert deletions.pending("ns/b", now=300) == {"u3"}
    assert deletions.pending("ns/a", now=301) == set()
    deletions.clear("ns/b")
    assert deletions.pending("ns/b", now=301) == set()


def test_every_expect_drops_the_aged_entries_of_all_jobs() -> None:
    deletions = DeletionExpectations(ttl=10)
    deletions.expect("ns/old", ["u1"], now=0)
    deletions.expect("ns/new", ["u2"], now=20)
    assert "ns/old" not in deletions._sent
