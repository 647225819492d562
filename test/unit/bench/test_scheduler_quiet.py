"""bench.sidebyside.scheduler_quiet: reading kube-scheduler's load from its /metrics,
and waiting until it is quiet."""

from __future__ import annotations

import pytest

from bench.sidebyside.scheduler_quiet import (
    POLL_S,
    QUIET_WINDOW_S,
    SchedulerLoad,
    scheduler_load,
    wait_until_quiet,
)

_BUCKETS = ("0.005", "0.025", "0.1", "+Inf")


def metrics(pending: dict[str, int], waits: dict[str, list[int]]) -> str:
    """Scheduler metrics text: pending pods per queue; per verb, the cumulative counts
    of the limiter histogram's buckets (``_BUCKETS``)."""
    lines = ["# TYPE scheduler_pending_pods gauge"]
    lines += [f'scheduler_pending_pods{{queue="{q}"}} {n}' for q, n in pending.items()]
    lines.append("# TYPE rest_client_rate_limiter_duration_seconds histogram")
    for verb, counts in waits.items():
        labels = f'host="127.0.0.1:1",verb="{verb}"'
        for le, n in zip(_BUCKETS, counts, strict=True):
            lines.append(
                f'rest_client_rate_limiter_duration_seconds_bucket{{{labels},le="{le}"}} {n}'
            )
        lines.append(f"rest_client_rate_limiter_duration_seconds_sum{{{labels}}} 1.5")
        lines.append(f"rest_client_rate_limiter_duration_seconds_count{{{labels}}} {counts[-1]}")
    return "\n".join(lines) + "\n"


IDLE = {"active": 0, "backoff": 0, "gated": 0, "unschedulable": 7}


@pytest.mark.parametrize(
    ("pending", "waits", "want"),
    [
        (IDLE, {"GET": [3, 3, 3, 3]}, SchedulerLoad(pending=0, throttled=0)),
        (IDLE, {"POST": [10, 40, 90, 100], "PATCH": [0, 0, 5, 5]}, SchedulerLoad(0, 65)),
        ({"active": 2, "backoff": 1, "unschedulable": 9}, {}, SchedulerLoad(3, 0)),
        ({}, {}, SchedulerLoad(0, 0)),
    ],
    ids=["idle", "throttled-over-25ms", "pending-not-unschedulable", "empty"],
)
def test_scheduler_load(
    pending: dict[str, int], waits: dict[str, list[int]], want: SchedulerLoad
) -> None:
    assert scheduler_load(metrics(pending, waits)) == want


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def scripted(loads: list[tuple[int, int]], t: FakeTime) -> object:
    """read_metrics returning the loads (pending, throttled) in turn, the last for ever."""
    reads = iter(loads)
    last = loads[-1]

    def read() -> str:
        nonlocal last
        last = next(reads, last)
        pending, throttled = last
        return metrics({"active": pending}, {"POST": [0, 0, throttled, throttled]})

    return read


@pytest.mark.parametrize(
    ("loads", "quiet", "min_waited"),
    [
        # Quiet from the first read: done once the window has passed.
        ([(0, 5)], True, QUIET_WINDOW_S),
        # Still throttling for 8 reads (2 s): the window starts after the last growth.
        ([(0, i) for i in range(8)] + [(0, 8)], True, 7 * POLL_S + QUIET_WINDOW_S),
        # Pods pending for 4 reads, then quiet.
        ([(2, 0)] * 4 + [(0, 0)], True, 4 * POLL_S + QUIET_WINDOW_S),
        # Never quiet: gives up at the timeout.
        ([(1, 0)], False, 10.0),
    ],
    ids=["quiet", "throttled-then-quiet", "pending-then-quiet", "never-quiet"],
)
def test_wait_until_quiet(loads: list[tuple[int, int]], quiet: bool, min_waited: float) -> None:
    t = FakeTime()
    read = scripted(loads, t)
    assert wait_until_quiet(read, 10.0, t.clock, t.sleep) is quiet  # type: ignore[arg-type]
    assert min_waited <= t.now <= min_waited + POLL_S + 1e-9
