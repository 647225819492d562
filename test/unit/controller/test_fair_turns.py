"""Fair turns across jobs, simulated with the real work queue, sync runner, slow start
and the API client's fair token bucket at 1,000 qps, on a fake clock (virtual
seconds): big jobs fan out 500 creates per sync, and a 1-worker job created once each
of them has had its first turn must have its pod within about one big sync.

With client-go's FIFO (the continuation added like any key: the queue before the fix)
the same simulation reproduces the issue's figures: the small job waited 4.0 s behind
8 big jobs and 10.0 s behind 20 (2.0 s and 8.0 s when created with them); fair, 0.04
s and 0.09 s (0.02 s and 0.07 s)."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Histogram

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.ratelimit import DISPATCH_TICK, FairTokenBucket, request_flow
from mpi_operator.client.workqueue import RateLimitingQueue
from mpi_operator.controller.core.expectations import CreationExpectations
from mpi_operator.controller.core.pods import MAX_CREATES_PER_SYNC, create_slow_start
from mpi_operator.controller.options import ControllerOptions
from mpi_operator.controller.queue_controller import new_work_queue
from mpi_operator.controller.runner import SyncRunner

QPS = 1000.0
BIG = 20_000
SMALL = "small/s"
#: Virtual seconds one big sync takes alone (500 creates at 1,000 qps).
BIG_SYNC_S = MAX_CREATES_PER_SYNC / QPS


@dataclass
class Cluster:
    """What the simulated API server saw: creates per job, and when the small job's
    pod was created (virtual seconds)."""

    clock: FakeClock
    bucket: FairTokenBucket
    created: Counter[str] = field(default_factory=Counter)
    small_pod_at: float | None = None

    async def request(self) -> None:
        await self.bucket.wait()


async def _run_virtual(clock: FakeClock, done: Any, limit: float) -> None:
    """Runs the loop in virtual time, 10 ms at a time, until ``done()``: enough turns of
    the loop in each step for a batch's creates, which start one per turn, to start (a
    real loop turns thousands of times in 10 ms)."""
    end = clock.monotonic() + limit
    while not done():
        assert clock.monotonic() < end, "the simulation did not get there in time"
        await clock.settle(600)
        clock.step(0.01)


async def _small_job_wait(bigs: int, *, fair: bool, at_once: bool = False) -> float:
    """Virtual seconds from the small job's add to its pod's create, the big jobs
    created before it: each past its first turn, or (``at_once``) just before it."""
    clock = FakeClock()
    cluster = Cluster(clock, FairTokenBucket(QPS, int(2 * QPS), clock, tick=DISPATCH_TICK))
    queue: RateLimitingQueue[str] = new_work_queue(
        "sim", ControllerOptions(), clock, CollectorRegistry()
    )
    if not fair:
        queue.max_continuing = None
    requeue = queue.add_continuation if fair else queue.add
    expectations = CreationExpectations(clock)

    async def sync(key: str) -> None:
        with request_flow(key):
            if key == SMALL:  # its Service, ConfigMap and Secret, at once
                await asyncio.gather(*(cluster.request() for _ in range(3)))

            async def create(name: str) -> dict[str, Any]:
                await cluster.request()
                cluster.created[key] += 1
                if key == SMALL:
                    cluster.small_pod_at = clock.monotonic()
                return {"metadata": {"name": name}}

            total = 1 if key == SMALL else BIG
            pending = [
                (f"{key}-{i}", lambda n=f"{key}-{i}": create(n))
                for i in range(cluster.created[key], total)
            ]
            continuing = queue.continuing(key) if fair else True
            await create_slow_start(expectations, key, pending, requeue, continuing=continuing)
            expectations.forget(key)  # the informer's add events, at once
            if key == SMALL:  # its launcher Job, then its status
                await cluster.request()
                await cluster.request()

    duration = Histogram("sync_seconds", "", ["result"], registry=CollectorRegistry())
    runner = SyncRunner("sim", queue, sync, duration, threadiness=ControllerOptions().threadiness)
    runner.start()
    try:
        big = [f"big/b{i}" for i in range(bigs)]
        for key in big:
            queue.add(key)
        if not at_once:  # each big job has had its turns: all of them are fanning out
            await _run_virtual(clock, lambda: min(cluster.created[k] for k in big) >= 500, 60)
        added = clock.monotonic()
        queue.add(SMALL)
        await _run_virtual(clock, lambda: cluster.small_pod_at is not None, 120)
        assert cluster.small_pod_at is not None
        return cluster.small_pod_at - added
    finally:
        await runner.stop(0)


@pytest.mark.parametrize("at_once", [False, True], ids=["during", "at-once"])
@pytest.mark.parametrize("bigs", [8, 20])
async def test_a_new_small_job_gets_its_pod_within_a_big_sync_however_many_fan_out(
    bigs: int, at_once: bool
) -> None:
    """Created during the fan-outs, or together with the big jobs (their first turns
    are one batch each: see slowstart.FIRST_TURN)."""
    waited = await _small_job_wait(bigs, fair=True, at_once=at_once)
    print(f"fair: small job's pod {waited:.2f} s after it was added, behind {bigs} big jobs")
    # A worker is kept for it: its requests go in turns with the one big sync running
    # (the bucket's round robin), not after the big jobs' 500-pod syncs.
    assert waited < BIG_SYNC_S, waited


@pytest.mark.parametrize(("bigs", "at_once", "at_least"), [(8, False, 3.0), (8, True, 1.5)])
async def test_with_client_gos_fifo_the_small_job_waits_for_every_big_sync(
    bigs: int, at_once: bool, at_least: float
) -> None:
    """The simulation reproduces the issue: the continuation requeued as any key."""
    waited = await _small_job_wait(bigs, fair=False, at_once=at_once)
    print(f"FIFO: small job's pod {waited:.2f} s after it was added, behind {bigs} big jobs")
    assert waited >= at_least, waited


async def test_the_big_jobs_keep_the_whole_rate_while_one_worker_is_kept() -> None:
    """Keeping a worker free costs the fan-outs nothing: one sync at a time still
    takes every token (the client's rate, not the workers, bounds them)."""
    clock = FakeClock()
    cluster = Cluster(clock, FairTokenBucket(QPS, 1, clock, tick=DISPATCH_TICK))
    queue = new_work_queue("sim", ControllerOptions(), clock, CollectorRegistry())
    expectations = CreationExpectations(clock)

    async def sync(key: str) -> None:
        async def create() -> dict[str, Any]:
            await cluster.request()
            cluster.created[key] += 1
            return {}

        pending = [(f"{key}-{i}", create) for i in range(cluster.created[key], 2_000)]
        await create_slow_start(expectations, key, pending, queue.add_continuation)
        expectations.forget(key)

    duration = Histogram("d", "", ["result"], registry=None)
    runner = SyncRunner("sim", queue, sync, duration, threadiness=2)
    runner.start()
    try:
        for key in ("a/a", "b/b", "c/c"):
            queue.add(key)
        started = clock.monotonic()
        await _run_virtual(clock, lambda: sum(cluster.created.values()) >= 6_000, 60)
        elapsed = clock.monotonic() - started
    finally:
        await runner.stop(0)
    assert elapsed < 6_000 / QPS * 1.1, elapsed
