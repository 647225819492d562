"""The event loop's lag, so that a stall is visible.

Everything the operator does shares one event loop: a handler or a build that holds it
for seconds delays every sync, every watch and the Lease's renewal. A small task asks to
wake every :data:`LAG_INTERVAL` seconds and records how late it woke in the histogram
``mpi_operator_event_loop_lag_seconds``; a wake-up later than :data:`LAG_WARNING`
is logged as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref

import structlog
from prometheus_client import REGISTRY, CollectorRegistry, Histogram

log = structlog.get_logger(__name__)

#: How often the monitor asks to wake.
LAG_INTERVAL = 0.25
#: A wake-up this late is logged.
LAG_WARNING = 1.0
#: Fine below 100 ms (a healthy loop), coarse up to the Lease's renew deadline and past it.
LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

# Keyed weakly by registry: an id() could be reused by a later registry.
_histograms: weakref.WeakKeyDictionary[CollectorRegistry, Histogram] = weakref.WeakKeyDictionary()


def lag_histogram(registry: CollectorRegistry) -> Histogram:
    histogram = _histograms.get(registry)
    if histogram is None:
        histogram = Histogram(
            "mpi_operator_event_loop_lag_seconds",
            "How much later than asked the event loop woke a periodic task",
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        _histograms[registry] = histogram
    return histogram


class EventLoopLagMonitor:
    """Measures the loop's lag while started (see the module docstring)."""

    def __init__(
        self,
        *,
        interval: float = LAG_INTERVAL,
        warn_after: float = LAG_WARNING,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.interval = interval
        self.warn_after = warn_after
        self.histogram = lag_histogram(REGISTRY if registry is None else registry)
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            expected = loop.time() + self.interval
            await asyncio.sleep(self.interval)
            lag = max(loop.time() - expected, 0.0)
            self.histogram.observe(lag)
            if lag >= self.warn_after:
                log.warning("the event loop was blocked", lag_seconds=round(lag, 3))

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="event-loop-lag")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
