"""Progress-only writes of a fanning-out job are spaced 1, 2, 4 ... 30 s apart; any
other write starts the spacing over; a deferred write asks for the key again."""

from __future__ import annotations

import pytest

from mpi_operator.builders.kubeflow.common import DISCOVER_HOSTS_SCRIPT_NAME, HOSTFILE_NAME
from mpi_operator.client.clock import FakeClock
from mpi_operator.controller.core.state import ProgressWrites
from mpi_operator.controller.kubeflow.children import _more_hosts_only
from mpi_operator.controller.kubeflow.status import counts_only

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
