"""/healthz and /metrics handlers, served by aiohttp's test server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry, Gauge

from mpi_operator.client.leaderelection import HealthzAdaptor
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
