"""Connections of the API transport, against a local HTTP server: requests wait for one
of REQUEST_CONNECTIONS slots; watches take none, so open watches never hold requests back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
from aiohttp import web
from local_http import serving

from mpi_operator.client.lean_imports import Configuration
from mpi_operator.client.transport import REQUEST_CONNECTIONS, ApiTransport


class Server:
    """Answers /slow once released, and streams /watch until the test ends."""

    def __init__(self) -> None:
        self.in_flight = self.most_in_flight = 0
        self.release = asyncio.Event()
        self.watching = 0
        self.changed = asyncio.Condition()

    async def _notify(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    async def until(self, check: Callable[[], bool], what: str) -> None:
        """Waits, 10 s at most, until ``check`` holds after a request came or went."""
        try:
            async with asyncio.timeout(10), self.changed:
                await self.changed.wait_for(check)
        except TimeoutError:
            raise AssertionError(f"not within 10 s: {what}") from None

    async def slow(self, request: web.Request) -> web.Response:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await self._notify()
        try:
            await self.release.wait()
        finally:
            self.in_flight -= 1
        return web.json_response({"ok": True})

    async def fast(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def watch(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        self.watching += 1
        await self._notify()
        await resp.write(b'{"type": "BOOKMARK", "object": {}}\n')
        await asyncio.Event().wait()  # held open until the client goes
        return resp


@pytest.fixture
async def served() -> AsyncIterator[tuple[Server, ApiTransport]]:
    server = Server()
    app = web.Application()
    app.router.add_get("/slow", server.slow)
    app.router.add_get("/fast", server.fast)
    app.router.add_get("/watch", server.watch)
    async with serving(app) as url:
        transport = ApiTransport(Configuration(host=url), qps=-1)
        try:
            yield server, transport
        finally:
            server.release.set()
            await transport.close()


async def test_requests_wait_for_a_slot_and_watches_do_not(
    served: tuple[Server, ApiTransport],
) -> None:
    server, transport = served
    slow = [
        asyncio.create_task(transport.request("GET", "/slow"))
        for _ in range(REQUEST_CONNECTIONS + 8)
    ]
    await server.until(lambda: server.in_flight == REQUEST_CONNECTIONS, "every slot taken")

    async def watch() -> None:
        async with transport.stream("/watch") as resp:
            async for _chunk in resp.content.iter_any():
                pass

    watches = [asyncio.create_task(watch()) for _ in range(REQUEST_CONNECTIONS + 8)]
    try:
        # Every slot is taken, yet each watch gets its own connection.
        await server.until(lambda: server.watching == len(watches), "every watch open")
        assert server.in_flight == REQUEST_CONNECTIONS
        server.release.set()
        assert all(r == {"ok": True} for r in await asyncio.gather(*slow))
        assert server.most_in_flight == REQUEST_CONNECTIONS
        # With every watch still open, requests go through.
        assert await asyncio.wait_for(transport.request("GET", "/fast"), 10) == {"ok": True}
    finally:
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)


async def test_a_closed_transport_opens_no_new_connections(
    served: tuple[Server, ApiTransport],
) -> None:
    _, transport = served
    assert await transport.request("GET", "/fast") == {"ok": True}
    await transport.close()
    with pytest.raises(RuntimeError, match="closed"):
        await transport.request("GET", "/fast")
