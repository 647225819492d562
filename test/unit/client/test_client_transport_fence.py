"""A fenced write that must open a connection has only until leadership goes stale to
get one: against a loopback server that accepts TCP and never answers TLS, the write
fails once the fence's fresh time is over, not after the request's 60 s."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest

from mpi_operator.client.fence import LeadershipFence
from mpi_operator.client.lean_imports import Configuration
from mpi_operator.client.transport import ApiTransport


@pytest.fixture
async def silent_tls() -> AsyncIterator[str]:
    """An https URL whose server takes the connection and never says a word."""
    held: list[asyncio.StreamWriter] = []

    async def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"https://127.0.0.1:{port}"
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_a_write_cannot_outlive_the_fence_while_connecting(silent_tls: str) -> None:
    fence = LeadershipFence(renew_deadline=0.3)
    fence.renewed(fence.clock.monotonic())
    config = Configuration(host=silent_tls)
    config.verify_ssl = False
    transport = ApiTransport(config, qps=-1, fence=fence)
    started = time.monotonic()
    try:
        with pytest.raises((aiohttp.ServerTimeoutError, TimeoutError)):
            await transport.request("POST", "/api/v1/namespaces/a/pods", body={})
    finally:
        await transport.close()
    assert time.monotonic() - started < 5


def test_reads_and_exempt_paths_are_not_bounded_by_the_fence() -> None:
    fence = LeadershipFence(renew_deadline=10, exempt=["/lease"])
    fence.renewed(fence.clock.monotonic())
    assert fence.fresh_for("GET", "/api/v1/pods") is None
    assert fence.fresh_for("PUT", "/lease") is None
    left = fence.fresh_for("POST", "/api/v1/pods")
    assert left is not None and 9 < left <= 10
