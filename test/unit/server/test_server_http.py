"""/healthz and /metrics handlers, served by aiohttp's test server."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from mpi_operator.client.clock import RealClock
from mpi_operator.client.leaderelection import HealthzAdaptor
from mpi_operator.client.workqueue import WorkQueue
from mpi_operator.server.http import HttpServer, healthz_app, metrics_app


class Switch:
    def __init__(self, name: str) -> None:
        self.name = name
        self.reason: str | None = None

    def check(self) -> str | None:
        return self.reason


async def _client(app: web.Application) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    client: TestClient[web.Request, web.Application] = TestClient(TestServer(app))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
def switch() -> Switch:
    return Switch("leaderElection")


@pytest.fixture
async def healthz(switch: Switch) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    async for c in _client(healthz_app([switch])):
        yield c


async def test_healthz_ok(healthz: TestClient[web.Request, web.Application]) -> None:
    resp = await healthz.get("/healthz")
    assert resp.status == 200
    assert await resp.text() == "ok"
    resp = await healthz.get("/healthz/leaderElection")
    assert (resp.status, await resp.text()) == (200, "ok")
    resp = await healthz.get("/healthz?verbose")
    assert "[+]leaderElection ok" in await resp.text()


async def test_healthz_fails_when_a_check_fails(
    healthz: TestClient[web.Request, web.Application], switch: Switch
) -> None:
    switch.reason = "lease not renewed"
    resp = await healthz.get("/healthz")
    assert resp.status == 500
    body = await resp.text()
    assert "[-]leaderElection failed" in body
    assert "lease not renewed" not in body  # reasons are logged, not served
    assert (await healthz.get("/healthz/leaderElection")).status == 500
    assert (await healthz.get("/healthz/ping")).status == 200
    assert (await healthz.get("/healthz/nope")).status == 404


async def test_healthz_with_unwired_leader_adaptor_is_ok() -> None:
    async for c in _client(healthz_app([HealthzAdaptor(20.0)])):
        assert (await c.get("/healthz")).status == 200


async def test_metrics_serves_the_registry() -> None:
    registry = CollectorRegistry()
    Gauge("mpi_operator_is_leader", "leader", registry=registry).set(1)
    async for c in _client(metrics_app(registry)):
        resp = await c.get("/metrics")
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain")
        assert "mpi_operator_is_leader 1.0" in await resp.text()
        resp = await c.get("/metrics", headers={"Accept": "application/openmetrics-text"})
        assert resp.headers["Content-Type"].startswith("application/openmetrics-text")
        assert (await resp.text()).rstrip().endswith("# EOF")


async def test_http_server_bind_failure_raises_and_frees() -> None:
    first = HttpServer("a", healthz_app([]), "127.0.0.1", 0)
    await first.start()
    try:
        assert first._site is not None
        port = first._site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        second = HttpServer("b", healthz_app([]), "127.0.0.1", port)
        with pytest.raises(OSError):
            await second.start()
    finally:
        await first.stop()


class _PausingNow(float):
    """A monotonic reading whose subtraction (the in-flight gauge's sum over the
    queue's start times) pauses once, mid-iteration, until the loop has changed them."""

    def __new__(cls, value: float, race: _Race) -> _PausingNow:
        obj = super().__new__(cls, value)
        obj.race = race  # type: ignore[attr-defined]
        return obj

    def __sub__(self, other: float) -> float:  # type: ignore[override]
        race: _Race = self.race  # type: ignore[attr-defined]
        if race.armed:
            race.armed = False
            race.paused.set()
            # On the loop's thread this waits in vain: nothing else runs meanwhile.
            race.mutated.wait(1.0)
        return float(self) - other


class _Race(RealClock):
    def __init__(self) -> None:
        self.armed = False
        self.paused = threading.Event()
        self.mutated = threading.Event()

    def monotonic(self) -> float:
        return _PausingNow(super().monotonic(), self)


async def test_metrics_scrape_is_consistent_while_the_loop_changes_the_queue() -> None:
    """A scrape collected in a thread met "dictionary changed size during iteration"
    when a worker took an item mid-collection; collected on the loop, it cannot."""
    registry, clock = CollectorRegistry(), _Race()
    queue: WorkQueue[str] = WorkQueue("race", clock=clock, registry=registry)
    for key in ("ns/a", "ns/b", "ns/c"):
        queue.add(key)
    await queue.get()
    await queue.get()  # two items in flight: their start times are summed on scrape

    async def take_one_mid_scrape() -> None:
        await asyncio.to_thread(clock.paused.wait, 5.0)
        await queue.get()  # a worker starts ns/c: one more start time
        clock.mutated.set()

    async for c in _client(metrics_app(registry)):
        clock.armed = True
        worker = asyncio.create_task(take_one_mid_scrape())
        resp = await c.get("/metrics")
        await worker
        assert clock.paused.is_set() and clock.mutated.is_set()
        assert resp.status == 200, await resp.text()
        families = {f.name: f for f in text_string_to_metric_families(await resp.text())}
        assert families["workqueue_unfinished_work_seconds"].samples[0].labels == {"name": "race"}


class _SlowCollector:
    """A collector that takes a while (thousands of per-job series) and notes its thread."""

    def __init__(self) -> None:
        self.threads: list[int] = []

    def collect(self) -> Iterator[Metric]:
        self.threads.append(threading.get_ident())
        time.sleep(0.3)
        yield GaugeMetricFamily("slow_collector_value", "a slow collection", value=1)


async def test_a_scrape_is_collected_off_the_event_loop() -> None:
    """The loop keeps turning (Lease renewals, syncs) while a scrape is collected; the
    work queues' in-flight readings are still made on the loop, in the same scrape."""
    registry, collector = CollectorRegistry(), _SlowCollector()
    registry.register(collector)
    queue: WorkQueue[str] = WorkQueue("offloop", registry=registry)
    queue.add("ns/a")
    await queue.get()
    ticks: list[float] = []

    async def tick() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    async for c in _client(metrics_app(registry)):
        ticker = asyncio.create_task(tick())
        try:
            resp = await c.get("/metrics")
            text = await resp.text()
        finally:
            ticker.cancel()
    assert collector.threads and threading.get_ident() not in collector.threads
    assert len(ticks) >= 10, "the loop was blocked while the scrape was collected"
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["slow_collector_value"].samples[0].value == 1
    (unfinished,) = families["workqueue_unfinished_work_seconds"].samples
    assert unfinished.labels == {"name": "offloop"} and 0 <= unfinished.value < 60
