"""Prometheus metrics for work queues, named as client-go names them.

client-go registers these through component-base with a ``name`` label; we
do the same with prometheus_client. Metric families are created once per
``CollectorRegistry`` (creating them twice in one registry is an error), so
several queues - and tests with their own registries - can coexist.

The two "in flight" gauges (unfinished work, longest running processor) are
computed when scraped via ``set_function`` instead of by a 500 ms polling loop
as in client-go; the values are the same, just fresher, and no task is needed.
A scrape is collected off the event loop (``/metrics`` renders in a thread), but
the queue's in-flight times are the loop's: a thread iterating them while a
worker takes an item would fail ("dictionary changed size during iteration"),
so those two readings alone are made on the loop (:func:`read_on_loop`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

# client-go: prometheus.ExponentialBuckets(10e-9, 10, 10)
_DURATION_BUCKETS = tuple(10e-9 * 10**i for i in range(10))


@dataclass(frozen=True)
class _Families:
    depth: Gauge
    adds: Counter
    latency: Histogram
    work_duration: Histogram
    unfinished: Gauge
    longest_running: Gauge
    retries: Counter


#: How long a scrape waits for the loop to read a queue's in-flight times; a stalled
#: loop leaves them NaN for that scrape rather than hanging it.
LOOP_READ_TIMEOUT = 2.0


def read_on_loop(read: Callable[[], float]) -> Callable[[], float]:
    """``read`` made on the event loop running now (the one that owns what it reads),
    whichever thread calls the result; ``read`` itself when no loop runs."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return read

    def on_loop() -> float:
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if current is loop or not loop.is_running():
            return read()  # on the loop already, or nothing can change meanwhile
        answer: concurrent.futures.Future[float] = concurrent.futures.Future()

        def run() -> None:
            try:
                answer.set_result(read())
            except Exception as err:
                answer.set_exception(err)

        try:
            loop.call_soon_threadsafe(run)
            return answer.result(timeout=LOOP_READ_TIMEOUT)
        except (RuntimeError, TimeoutError):  # the loop closed, or it is stalled
            return math.nan

    return on_loop


# Keyed weakly by registry: an id() could be reused by a later registry.
_families: weakref.WeakKeyDictionary[CollectorRegistry, _Families] = weakref.WeakKeyDictionary()


def _families_for(registry: CollectorRegistry) -> _Families:
    fam = _families.get(registry)
    if fam is None:
        fam = _Families(
            depth=Gauge(
                "workqueue_depth", "Current depth of workqueue", ["name"], registry=registry
            ),
            adds=Counter(
                "workqueue_adds_total",
                "Total number of adds handled by workqueue",
                ["name"],
                registry=registry,
            ),
            latency=Histogram(
                "workqueue_queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested.",
                ["name"],
                buckets=_DURATION_BUCKETS,
                registry=registry,
            ),
            work_duration=Histogram(
                "workqueue_work_duration_seconds",
                "How long in seconds processing an item from workqueue takes.",
                ["name"],
                buckets=_DURATION_BUCKETS,
                registry=registry,
            ),
            unfinished=Gauge(
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has done that is in progress and hasn't "
                "been observed by work_duration. Large values indicate stuck threads.",
                ["name"],
                registry=registry,
            ),
            longest_running=Gauge(
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running.",
                ["name"],
                registry=registry,
            ),
            retries=Counter(
                "workqueue_retries_total",
                "Total number of retries handled by workqueue",
                ["name"],
                registry=registry,
            ),
        )
        _families[registry] = fam
    return fam


class QueueMetrics:
    """The children of the metric families for one named queue."""

    def __init__(
        self,
        name: str,
        registry: CollectorRegistry | None,
        unfinished: Callable[[], float],
        longest: Callable[[], float],
    ) -> None:
        fam = _families_for(registry if registry is not None else REGISTRY)
        self.depth = fam.depth.labels(name=name)
        self.adds = fam.adds.labels(name=name)
        self.latency = fam.latency.labels(name=name)
        self.work_duration = fam.work_duration.labels(name=name)
        self.retries = fam.retries.labels(name=name)
        fam.unfinished.labels(name=name).set_function(read_on_loop(unfinished))
        fam.longest_running.labels(name=name).set_function(read_on_loop(longest))
