"""Whether kube-scheduler is still working off the runs before, from its ``/metrics``.

A canary pod that goes Ready shows that the bindings queued before it are done, not
that the scheduler's client is idle: when a run's namespace is deleted while its pods
still wait to be bound, the scheduler goes on binding them (and failing, and patching
their status), taking its client's tokens for seconds after the canary got its own.
The next run then starts with the client's burst spent, and its pods are bound at the
client's steady 50 a second instead of in a burst (seen once: a run whose 250 pods
existed after 0.57 s, p50, were scheduled after 3.23 s).

Quiet means: no pod in the scheduler's active or backoff queue, and no request held
back by its client's rate limiter for longer than :data:`THROTTLED_ABOVE` seconds during
the last :data:`QUIET_WINDOW_S` seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

#: A rate-limiter wait longer than this (a bucket bound of client-go's histogram) counts.
THROTTLED_ABOVE = 0.025
#: How long the scheduler must stay quiet.
QUIET_WINDOW_S = 1.0
#: Seconds between two reads of its metrics.
POLL_S = 0.25
_LIMITER = "rest_client_rate_limiter_duration_seconds"


@dataclass(frozen=True)
class SchedulerLoad:
    pending: int
    """Pods in the active and backoff queues."""
    throttled: int
    """Requests held back longer than THROTTLED_ABOVE since the scheduler started."""


def scheduler_load(metrics: str) -> SchedulerLoad:
    pending = 0
    total = 0.0
    quick = 0.0
    for family in text_string_to_metric_families(metrics):
        for sample in family.samples:
            if sample.name == "scheduler_pending_pods":
                if sample.labels.get("queue") in ("active", "backoff"):
                    pending += int(sample.value)
            elif sample.name == f"{_LIMITER}_count":
                total += sample.value
            elif (
                sample.name == f"{_LIMITER}_bucket"
                and float(sample.labels.get("le", "nan")) == THROTTLED_ABOVE
            ):
                quick += sample.value
    return SchedulerLoad(pending=pending, throttled=int(total - quick))


def wait_until_quiet(
    read_metrics: Callable[[], str],
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Polls until the scheduler has been quiet for QUIET_WINDOW_S; False if it was
    not within ``timeout`` seconds (the caller goes on: the record's settle time shows
    it)."""
    deadline = clock() + timeout
    since: float | None = None  # the first read of the current quiet streak
    throttled = -1
    while True:
        now = clock()
        load = scheduler_load(read_metrics())
        if load.pending or load.throttled != throttled:
            since = None if load.pending else now
            throttled = load.throttled
        elif since is None:
            since = now
        elif now - since >= QUIET_WINDOW_S:
            return True
        if now >= deadline:
            return False
        sleep(POLL_S)
