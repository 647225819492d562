"""At most max_in_flight(qps) requests are sent at once (a TLS connection each, about
360 KiB); watches are not counted, so they never wait for a request's slot."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
from aiohttp import web

from mpi_operator.client.kubeapi import PODS, KubeClient
from mpi_operator.client.lean_imports import ApiClient, Configuration
from mpi_operator.client.transport import max_in_flight


@pytest.mark.parametrize(
    ("qps", "expected"),
    [(5, 16), (64, 16), (100, 25), (101, 26), (400, 100), (1000, 100), (-1, 100)],
)
def test_a_quarter_of_the_qps_between_16_and_100(qps: float, expected: int) -> None:
    assert max_in_flight(qps) == expected


class Server:
    def __init__(self) -> None:
        self.now = self.peak = 0
        self.release = asyncio.Event()
        self.arrived = asyncio.Condition()

    async def create(self, request: web.Request) -> web.Response:
        self.now += 1
        self.peak = max(self.peak, self.now)
        async with self.arrived:
            self.arrived.notify_all()
        try:
            await self.release.wait()
        finally:
            self.now -= 1
        return web.json_response({"metadata": {"name": "p"}}, status=201)

    async def watch(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"1"}}}\n')
        await self.release.wait()
        return resp


@pytest.fixture
async def served() -> AsyncIterator[tuple[Server, KubeClient]]:
    server = Server()
    app = web.Application()
    app.router.add_post("/api/v1/namespaces/{ns}/pods", server.create)
    app.router.add_get("/api/v1/namespaces/{ns}/pods", server.watch)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    client = KubeClient(ApiClient(Configuration(host=f"http://127.0.0.1:{port}")), qps=-1)
    client.in_flight = asyncio.Semaphore(3)
    try:
        yield server, client
    finally:
        server.release.set()
        await client.close()
        await runner.cleanup()


async def wait_for(server: Server, predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(10), server.arrived:
        await server.arrived.wait_for(predicate)


async def test_requests_beyond_the_limit_wait_and_watches_do_not(
    served: tuple[Server, KubeClient],
) -> None:
    server, client = served
    watches = [client.watch(PODS, "ns", timeout_seconds=30) for _ in range(4)]
    for watch in watches:
        await anext(watch)  # four watches open, none waiting for a slot
    creates = [
        asyncio.create_task(client.create(PODS, "ns", {"metadata": {"name": f"p{i}"}}))
        for i in range(8)
    ]
    await wait_for(server, lambda: server.now == 3)
    with pytest.raises(TimeoutError):  # no fourth comes while three are in flight
        async with asyncio.timeout(0.3):
            await wait_for(server, lambda: server.now > 3)
    assert server.peak == 3
    server.release.set()
    created = await asyncio.gather(*creates)
    assert [c["metadata"]["name"] for c in created] == ["p"] * 8
    assert server.peak == 3
    assert client.in_flight._value == 3  # every slot given back
    for watch in watches:
        await watch.aclose()
