"""A local aiohttp server for the client's transport tests (loopback, a free port)."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Protocol, TypeVar

from aiohttp import web

from mpi_operator.client.lean_imports import Configuration


@asynccontextmanager
async def serving(app: web.Application, tls: ssl.SSLContext | None = None) -> AsyncIterator[str]:
    """Serves ``app`` on 127.0.0.1 (over ``tls``, if given) until the block ends;
    yields its base URL."""
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
        await site.start()
        scheme = "https" if tls else "http"
        yield f"{scheme}://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


class _Closable(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


@asynccontextmanager
async def client_to(app: web.Application, make: Callable[[Configuration], C]) -> AsyncIterator[C]:
    """``make``'s client of ``app`` served on loopback; closed after."""
    async with serving(app) as url:
        client = make(Configuration(host=url))
        try:
            yield client
        finally:
            await client.close()
