"""The process's HTTP endpoints on aiohttp: ``/healthz`` and ``/metrics``.

``/healthz`` answers 200 ``ok`` while every registered check passes and 500
with one ``[-]name failed`` line per failing check otherwise, like the
Kubernetes healthz handlers; ``/healthz/<name>`` runs one check. The
operator's checks: ``leaderElection``, ``informers`` (one has died, or has
been unable to list for over a minute) and ``syncWorkers`` (a sync worker's task
ended: the controller has fewer workers than it should, for good). ``/metrics`` exposes a Prometheus
registry (the default one unless told otherwise) in the format the scraper asks
for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Protocol

import structlog
from aiohttp import web
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.exposition import choose_encoder

log = structlog.get_logger(__name__)


class HealthCheck(Protocol):
    name: str

    def check(self) -> str | None:
        """None when healthy, else why not."""
        ...


class PingCheck:
    name = "ping"

    def check(self) -> str | None:
        return None


class InformersCheck:
    """Fails once an informer has died or cannot list (its cache no longer follows the
    API server)."""

    name = "informers"

    def __init__(self, failures: Callable[[], list[str]]) -> None:
        self._failures = failures

    def check(self) -> str | None:
        return "; ".join(self._failures()) or None


class SyncWorkersCheck(InformersCheck):
    """Fails once a sync worker has ended while the controller runs."""

    name = "syncWorkers"


def _run_checks(checks: Sequence[HealthCheck]) -> tuple[bool, list[str]]:
    ok = True
    lines: list[str] = []
    for c in checks:
        try:
            reason = c.check()
        except Exception as err:
            reason = f"check raised {err!r}"
        if reason is None:
            lines.append(f"[+]{c.name} ok")
        else:
            ok = False
            lines.append(f"[-]{c.name} failed: reason withheld")
            log.warning("health check failed", check=c.name, reason=reason)
    return ok, lines


def healthz_app(checks: Sequence[HealthCheck]) -> web.Application:
    all_checks: list[HealthCheck] = [PingCheck(), *checks]

    async def healthz(request: web.Request) -> web.Response:
        ok, lines = _run_checks(all_checks)
        if ok and "verbose" not in request.query:
            return web.Response(text="ok")
        status = "passed" if ok else "failed"
        body = "\n".join([*lines, f"healthz check {status}"]) + "\n"
        return web.Response(text=body, status=200 if ok else 500)

    async def single(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        for c in all_checks:
            if c.name == name:
                ok, _ = _run_checks([c])
                if ok:
                    return web.Response(text="ok")
                return web.Response(text=f"internal server error: {name} failed\n", status=500)
        raise web.HTTPNotFound()

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/healthz/{name}", single)
    return app


def metrics_app(registry: CollectorRegistry | None = None) -> web.Application:
    reg = REGISTRY if registry is None else registry

    async def metrics(request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        # Collected and rendered off the event loop: with thousands of per-job series
        # a scrape takes a while, and the Lease renewal must not wait behind it. The
        # metric objects lock themselves; the one reading of loop-owned state (the
        # work queues' in-flight times) hops to the loop (workqueue_metrics).
        body = await asyncio.to_thread(encoder, reg)
        return web.Response(body=body, headers={"Content-Type": content_type})

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    return app


class HttpServer:
    """One aiohttp application on one address, started and stopped explicitly."""

    def __init__(self, name: str, app: web.Application, host: str, port: int) -> None:
        self.name = name
        self.host = host
        self.port = port
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        self._site: web.TCPSite | None = None

    async def start(self) -> None:
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, self.host or None, self.port, reuse_address=True)
        try:
            await self._site.start()
        except BaseException:
            await self._runner.cleanup()
            raise
        log.info(f"serving {self.name}", address=self.host, port=self.port)

    async def stop(self) -> None:
        await self._runner.cleanup()
