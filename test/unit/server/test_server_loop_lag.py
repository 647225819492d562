"""The event-loop lag monitor: a blocked loop shows in its histogram (and the log)."""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry

from mpi_operator.server.loop_lag import EventLoopLagMonitor

METRIC = "mpi_operator_event_loop_lag_seconds"


def sample(registry: CollectorRegistry, suffix: str, **labels: str) -> float:
    return registry.get_sample_value(METRIC + suffix, labels) or 0.0


async def wait_for_observations(registry: CollectorRegistry, count: float) -> None:
    deadline = time.monotonic() + 5
    while sample(registry, "_count") < count:
        assert time.monotonic() < deadline, "the monitor observed nothing"
        await asyncio.sleep(0.01)


async def test_a_blocked_loop_shows_its_stall_in_the_histogram() -> None:
    registry = CollectorRegistry()
    monitor = EventLoopLagMonitor(interval=0.02, warn_after=0.2, registry=registry)
    monitor.start()
    try:
        await wait_for_observations(registry, 3)
        before = sample(registry, "_count")
        late_before = before - sample(registry, "_bucket", le="0.25")

        time.sleep(0.3)  # noqa: ASYNC251 - a handler that holds the loop, on purpose
        await wait_for_observations(registry, before + 2)

        # The wake-up due during the stall came late by it (0.3 s less the 0.02 s asked).
        late = sample(registry, "_count") - sample(registry, "_bucket", le="0.25")
        assert late >= late_before + 1
        assert sample(registry, "_sum") >= 0.25
    finally:
        await monitor.stop()
    stopped = sample(registry, "_count")
    await asyncio.sleep(0.1)
    assert sample(registry, "_count") == stopped  # stop() ends the task


async def test_two_monitors_on_one_registry_share_the_histogram() -> None:
    registry = CollectorRegistry()
    a = EventLoopLagMonitor(registry=registry)
    b = EventLoopLagMonitor(registry=registry)
    assert a.histogram is b.histogram
