"""Creation expectations: created pods count as existing until the cache shows them."""

from __future__ import annotations

import pytest

from mpi_operator.builders.kubeflow.common import DISCOVER_HOSTS_SCRIPT_NAME, HOSTFILE_NAME
from mpi_operator.client.clock import FakeClock
from mpi_operator.controller.core.expectations import CreationExpectations, DeletionExpectations
from mpi_operator.controller.core.own_writes import CONFIG_MAP, OwnWrites
from mpi_operator.controller.core.spacing import ProgressWrites
from mpi_operator.controller.kubeflow.children import _more_hosts_only
from mpi_operator.controller.kubeflow.status_spacing import counts_only


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


# ------------------------ test own writes ------------------------
#
# What a sync reads for an MPIJob after our own status write: the cached object, or the
# one the write returned while the cache still shows the object that write replaced.


KEY = "ns/pi"


def job(rv: str | None, marker: str = "") -> dict[str, object]:
    meta: dict[str, object] = {"name": "pi", "namespace": "ns"}
    if rv is not None:
        meta["resourceVersion"] = rv
    return {"metadata": meta, "status": {"marker": marker}}


@pytest.mark.parametrize(
    ("replaced", "returned", "cached", "read"),
    [
        pytest.param("1", "2", "1", "returned", id="cache not caught up: the write's answer"),
        pytest.param("1", "2", "2", "cached", id="cache caught up"),
        pytest.param("1", "2", "3", "cached", id="cache newer still"),
        pytest.param(None, "2", "1", "cached", id="no version replaced: nothing kept"),
        pytest.param("1", None, "1", "cached", id="no version returned: nothing kept"),
        pytest.param("1", "1", "1", "cached", id="same version: nothing to tell apart"),
    ],
)
def test_which_object_a_sync_reads(
    replaced: str | None, returned: str | None, cached: str, read: str
) -> None:
    writes = OwnWrites()
    writes.wrote(KEY, job(replaced), job(returned, "returned"))
    got = writes.latest(KEY, job(cached, "cached"))
    assert got is not None
    assert got["status"] == {"marker": read}


def test_what_was_kept_goes_once_the_cache_moved_on() -> None:
    writes = OwnWrites()
    writes.wrote(KEY, job("1"), job("2", "returned"))
    assert writes.latest(KEY, job("5", "cached")) == job("5", "cached")
    assert len(writes) == 0
    # A later stale read is not answered from a write that is gone.
    assert writes.latest(KEY, job("1", "cached")) == job("1", "cached")


def test_a_job_gone_from_the_cache_is_gone() -> None:
    writes = OwnWrites()
    writes.wrote(KEY, job("1"), job("2"))
    assert writes.latest(KEY, None) is None
    assert len(writes) == 0


def test_the_kept_object_has_no_managed_fields() -> None:
    writes = OwnWrites()
    answer = job("2", "returned")
    answer["metadata"]["managedFields"] = [{"manager": "mpi-operator"}]  # type: ignore[index]
    writes.wrote(KEY, job("1"), answer)
    got = writes.latest(KEY, job("1"))
    assert got is not None
    assert "managedFields" not in got["metadata"]


def test_jobs_are_kept_apart_and_forgotten_one_by_one() -> None:
    writes = OwnWrites()
    writes.wrote("ns/a", job("1"), job("2", "a"))
    writes.wrote("ns/b", job("1"), job("2", "b"))
    writes.clear("ns/a")
    assert writes.latest("ns/a", job("1", "cached"))["status"] == {"marker": "cached"}  # type: ignore[index]
    assert writes.latest("ns/b", job("1", "cached"))["status"] == {"marker": "b"}  # type: ignore[index]


def test_a_jobs_status_and_config_map_are_kept_apart_and_forgotten_together() -> None:
    writes = OwnWrites()
    writes.wrote(KEY, job("1"), job("2", "status"))
    writes.wrote(KEY, job("5"), job("6", "configmap"), CONFIG_MAP)
    assert len(writes) == 2
    assert writes.latest(KEY, job("1"))["status"] == {"marker": "status"}  # type: ignore[index]
    got = writes.latest(KEY, job("5"), CONFIG_MAP)
    assert got is not None and got["status"] == {"marker": "configmap"}
    assert writes.latest(KEY, job("7", "cached"), CONFIG_MAP) == job("7", "cached")
    assert len(writes) == 1  # the ConfigMap's went; the status's stays
    writes.clear(KEY)
    assert len(writes) == 0


@pytest.mark.parametrize(
    ("cached", "read"),
    [
        pytest.param("1", "second", id="cache two writes behind"),
        pytest.param("2", "second", id="cache one write behind"),
        pytest.param("3", "cached", id="cache caught up"),
    ],
)
def test_a_write_over_our_own_last_answer_supersedes_both_versions(cached: str, read: str) -> None:
    writes = OwnWrites()
    writes.wrote(KEY, job("1"), job("2", "first"))
    kept = writes.latest(KEY, job("1"))
    assert kept is not None
    writes.wrote(KEY, kept, job("3", "second"))
    got = writes.latest(KEY, job(cached, "cached"))
    assert got is not None
    assert got["status"] == {"marker": read}


def test_a_write_over_a_newer_cache_starts_afresh() -> None:
    writes = OwnWrites()
    writes.wrote(KEY, job("1"), job("2"))
    writes.wrote(KEY, job("5"), job("6", "returned"))  # the cache had moved on to "5"
    assert writes.latest(KEY, job("1", "cached"))["status"] == {"marker": "cached"}  # type: ignore[index]


# ------------------------ test progress writes ------------------------
#
# Progress-only writes of a fanning-out job are spaced 1, 2, 4 ... 30 s apart; any
# other write starts the spacing over; a deferred write asks for the key again.


KEY = "ns/pi"


def allowed_times(writes: ProgressWrites, clock: FakeClock, seconds: int) -> list[float]:
    """The seconds (from now) at which a progress write tried every 0.5 s goes."""
    start, went = clock.monotonic(), []
    for _ in range(seconds * 2):
        if writes.due("status", KEY) == 0.0:
            writes.wrote("status", KEY)
            went.append(clock.monotonic() - start)
        clock.step(0.5)
    return went


def test_the_first_waits_then_the_gaps_double_up_to_the_cap() -> None:
    clock = FakeClock()
    went = allowed_times(ProgressWrites(clock, first_gap=1.0, max_gap=8.0), clock, 40)
    assert went == [1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0]


def test_a_fanout_of_any_length_costs_a_handful_of_writes() -> None:
    clock = FakeClock()
    # Five minutes of workers starting: 1 write every 0.5 s would be 600.
    assert allowed_times(ProgressWrites(clock), clock, 300) == [60.0, 120.0, 240.0]


def test_a_milestone_starts_the_spacing_over() -> None:
    clock = FakeClock()
    writes = ProgressWrites(clock)
    allowed_times(writes, clock, 90)
    assert writes.due("status", KEY) > 0.0
    writes.reset(KEY)
    assert writes.due("status", KEY) == pytest.approx(60.0)  # as for a new job


def test_kinds_and_jobs_are_spaced_independently() -> None:
    clock = FakeClock()
    writes = ProgressWrites(clock)
    assert writes.due("status", KEY) == pytest.approx(60.0)
    clock.step(10)
    assert writes.due("configmap", KEY) == pytest.approx(60.0)
    assert writes.due("status", "ns/other") == pytest.approx(60.0)
    assert writes.due("status", KEY) == pytest.approx(50.0)


def test_a_small_jobs_progress_goes_every_few_seconds_without_doubling() -> None:
    clock = FakeClock()
    writes = ProgressWrites(clock)
    went = []
    for tick in range(60):  # 30 s, a try every 0.5 s
        if writes.due("status", KEY, 4) == 0.0:
            writes.wrote("status", KEY, 4)
            went.append(tick / 2)
        clock.step(0.5)
    assert went == [5.0, 10.0, 15.0, 20.0, 25.0]


@pytest.mark.parametrize(("workers", "first"), [(99, 5.0), (100, 60.0), (None, 60.0)])
def test_the_worker_count_sets_the_first_wait(workers: int | None, first: float) -> None:
    assert ProgressWrites(FakeClock()).due("status", KEY, workers) == pytest.approx(first)


def test_a_write_that_failed_books_nothing() -> None:
    clock = FakeClock()
    writes = ProgressWrites(clock)
    writes.due("status", KEY)
    clock.step(60)
    assert writes.due("status", KEY) == 0.0  # tried, and the write failed: no wrote()
    assert writes.due("status", KEY) == 0.0


def test_a_deferred_write_requeues_the_key_for_when_it_may_go() -> None:
    writes = ProgressWrites(FakeClock())
    requeued: list[tuple[str, float]] = []
    assert writes.defer("status", KEY, lambda k, s: requeued.append((k, s))) is True
    assert requeued == [(KEY, pytest.approx(60.0))]


def script(*hosts: str) -> dict[str, str]:
    lines = ["#!/bin/sh", *(f"echo {h}" for h in hosts)]
    return {
        HOSTFILE_NAME: "w-0 slots=1\nw-1 slots=1\n",
        DISCOVER_HOSTS_SCRIPT_NAME: "\n".join(lines),
    }


@pytest.mark.parametrize(
    ("current", "desired", "progress"),
    [
        (script("w-0"), script("w-0", "w-1"), True),
        (script(), script("w-0"), True),
        (script("w-0", "w-1"), script("w-0"), False),  # a host went away
        (script("w-0"), script("w-1"), False),  # one came, one went
        ({**script("w-0"), HOSTFILE_NAME: "x"}, script("w-0", "w-1"), False),
    ],
    ids=["gained", "first host", "lost", "swapped", "hostfile changed"],
)
def test_only_gained_hosts_are_progress(
    current: dict[str, str], desired: dict[str, str], progress: bool
) -> None:
    assert _more_hosts_only(current, desired) is progress


RUNNING = [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]


@pytest.mark.parametrize(
    ("old", "new", "progress"),
    [
        (
            {"conditions": RUNNING[:1], "replicaStatuses": {"Worker": {"active": 1}}},
            {"conditions": RUNNING[:1], "replicaStatuses": {"Worker": {"active": 5}}},
            True,
        ),
        (
            {"conditions": RUNNING[:1], "replicaStatuses": {}},
            {"conditions": RUNNING, "replicaStatuses": {}},
            False,
        ),
        ({}, {"conditions": RUNNING[:1]}, False),
        (
            {"conditions": RUNNING[:1]},
            {"conditions": RUNNING[:1], "startTime": "2026-11-25T00:00:00Z"},
            False,
        ),
    ],
    ids=["counts", "a condition", "first write", "start time"],
)
def test_only_moved_counts_are_progress_table(
    old: dict[str, object], new: dict[str, object], progress: bool
) -> None:
    assert counts_only(old, new) is progress


@pytest.mark.parametrize(
    ("old", "new", "progress"),
    [
        ({"Worker": {"active": 1}}, {"Worker": {"active": 2}}, True),
        ({"Worker": {"active": 2}}, {"Worker": {"active": 1}}, False),
        ({"Worker": {"active": 2}}, {"Worker": {"active": 2, "failed": 1}}, False),
        ({"Worker": {}}, {"Worker": {}, "Launcher": {"active": 1}}, False),
    ],
    ids=["more active", "fewer active", "a failure", "a new replica type"],
)
def test_only_more_active_replicas_are_progress(
    old: dict[str, object], new: dict[str, object], progress: bool
) -> None:
    conditions = [{"type": "Created", "status": "True"}]
    before = {"conditions": conditions, "replicaStatuses": old}
    assert counts_only(before, {"conditions": conditions, "replicaStatuses": new}) is progress
