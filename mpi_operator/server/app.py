"""The operator process: checks, leader election and the controller's lifecycle.

Sequence, as in the reference operator: serve ``/metrics`` (if asked), build
the API clients, check the cluster (:mod:`.preflight`), serve ``/healthz``,
then campaign for the ``mpi-operator`` Lease in the lock namespace. Only the
leader runs the controller.

Exit codes: 0 after SIGTERM/SIGINT (controller drained, Lease released);
1 when a start-up check fails, the controller cannot start, an informer dies
(its cache would be frozen; ``/healthz`` fails from that moment) or leadership
is lost (a restart is the clean way back to being a candidate). A second signal
during shutdown exits 1 at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import os
import signal
from collections.abc import Mapping
from typing import Protocol

import structlog

from mpi_operator.client import (
    LEASES,
    ClientConfig,
    HealthzAdaptor,
    KubeClient,
    LeaderCallbacks,
    LeaderElector,
    LeadershipFence,
    default_identity,
    load_client_config,
)
from mpi_operator.controller import MPIJobController
from mpi_operator.controller.t9k import T9kOptions, t9k_controller_if_served
from mpi_operator.server.http import (
    HealthCheck,
    HttpServer,
    InformersCheck,
    SyncWorkersCheck,
    healthz_app,
    metrics_app,
)
from mpi_operator.server.loop_lag import EventLoopLagMonitor
from mpi_operator.server.options import LOCK_NAME, ServerOptions, leader_election_config
from mpi_operator.server.preflight import Preflight, PreflightError
from mpi_operator.server.version import build_info, version_lines

log = structlog.get_logger(__name__)

EXIT_OK = 0
EXIT_FAILURE = 1
# Leading on a lease that lapsed this long ago still counts as healthy.
LEADER_HEALTHZ_TOLERANCE = 20.0
# Extra time allowed for informers, the recorder and the Lease release.
SHUTDOWN_SLACK = 5.0
# The cyclic collector's young generation, in allocations (CPython's default: 700).
GC_YOUNG_THRESHOLD = 10_000


def settle_heap() -> None:
    """Once the caches have synced, what is alive (modules, classes, the initial lists)
    mostly lives as long as the process: the cyclic collector stops scanning it
    (``gc.freeze``), and collects the young generation every 10,000 allocations
    instead of 700, so that a busy watch does not promote each event's short-lived
    dicts. The collector took 12% of a 2,000-worker fan-out's CPU before."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


class Controller(Protocol):
    """What the process needs of a controller (the Kubeflow one, the T9k one)."""

    async def start(self, sync_timeout: float | None = ...) -> None: ...

    async def stop(self, drain_seconds: float = ...) -> None: ...

    def informer_failures(self) -> list[str]: ...

    def worker_failures(self) -> list[str]: ...

    async def wait_for_informer_failure(self) -> str: ...


class Operator:
    def __init__(self, opts: ServerOptions, environ: Mapping[str, str] | None = None) -> None:
        self.opts = opts
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.identity = default_identity()
        self.healthz = HealthzAdaptor(LEADER_HEALTHZ_TOLERANCE)
        self.fence = LeadershipFence(
            opts.renew_deadline,
            exempt=(LEASES.path(opts.lock_namespace), LEASES.path(opts.lock_namespace, LOCK_NAME)),
            margin=opts.lease_duration - opts.renew_deadline,
        )
        self._stopping = asyncio.Event()
        self._fatal = asyncio.Event()
        self._fatal_reason = ""
        self._servers: list[HttpServer] = []
        self._clients: list[KubeClient] = []
        self.client: KubeClient | None = None
        self.election_client: KubeClient | None = None
        self.elector: LeaderElector | None = None
        self.controllers: list[Controller] = []
        """Started in this order when leading, stopped in the reverse order."""
        self.loop_lag = EventLoopLagMonitor()

    # -- entry point -----------------------------------------------------------
    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        signals = (signal.SIGTERM, signal.SIGINT)
        for sig in signals:
            loop.add_signal_handler(sig, self._on_signal, sig)
        try:
            setup = asyncio.create_task(self._setup(), name="setup")
            stop = asyncio.create_task(self._stopping.wait(), name="stop-signal")
            await asyncio.wait({setup, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not setup.done():
                setup.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await setup
                log.info("stopped before start-up completed")
                return EXIT_OK
            stop.cancel()
            code = setup.result()
            if code is not None:
                return code
            return await self._elect()
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)
            await self._cleanup()

    def _on_signal(self, sig: signal.Signals) -> None:
        if self._stopping.is_set():
            log.warning("second signal during shutdown; exiting now", signal=sig.name)
            os._exit(EXIT_FAILURE)
        log.info("signal received; shutting down", signal=sig.name)
        self._stopping.set()

    def _fail(self, reason: str) -> None:
        if not self._fatal.is_set():
            self._fatal_reason = reason
            self._fatal.set()

    # -- start-up --------------------------------------------------------------
    def _log_start(self) -> None:
        opts = self.opts
        log.info("starting mpi-operator", version=version_lines(), identity=self.identity)
        log.info("server options", **dataclasses.asdict(opts))
        if len(opts.namespaces) > 1:
            log.info("scoping operator to namespaces", namespaces=list(opts.namespaces))
        elif opts.namespace:
            log.info("scoping operator to one namespace", namespace=opts.namespace)
        else:
            log.info("using cluster scoped operator")

    async def _serve_metrics(self, host: str, port: int) -> None:
        server = HttpServer("metrics", metrics_app(), host, port)
        try:
            await server.start()
            self._servers.append(server)
        except OSError as err:
            # The reference operator logs this and carries on.
            log.error("monitoring endpoint setup failure", error=str(err))

    async def _setup(self) -> int | None:
        """Everything before the election; an exit code when it cannot go on."""
        opts = self.opts
        self.loop_lag.start()
        await asyncio.to_thread(build_info)  # may ask git once; cached for version_lines()
        self._log_start()
        metrics = opts.metrics_listen
        if metrics is not None:
            await self._serve_metrics(*metrics)
        try:
            config = await load_client_config(
                opts.kubeconfig, master=opts.master, environ=self.environ
            )
        except Exception as err:  # KubeconfigError says what is wrong; anything else too
            log.error(f"error building kube config: {err}")
            return EXIT_FAILURE
        # One configuration (one exec plugin run, one token refresh) for both clients.
        self.client = self._new_client("mpi-operator", config)
        self.election_client = self._new_client("mpi-operator/leader-election", config)
        # Only the Lease may be written once leadership is not fresh (the election
        # client writes nothing else; access reviews of the checks go through it).
        self.client.fence = self.fence
        # Built before the checks so that /metrics shows is_leader 0 from the start.
        self.elector = self._new_elector(self.election_client)
        preflight = Preflight(
            self.client,
            namespace=opts.namespaces or None,
            lock_namespace=opts.lock_namespace,
            gang=opts.gang,
            review_client=self.election_client,
        )
        try:
            await preflight.run()
        except PreflightError as err:
            log.error(str(err))
            return EXIT_FAILURE
        try:
            # Built now (started only when leading) so that their metrics are
            # exported by followers too.
            self.controllers = await self._new_controllers(self.client)
        except Exception as err:
            log.exception("controller set-up failed")
            log.error(f"error setting up the controller: {err}")
            return EXIT_FAILURE
        checks: list[HealthCheck] = [
            self.healthz,
            InformersCheck(self.informer_failures),
            SyncWorkersCheck(self.worker_failures),
        ]
        healthz = HttpServer("healthz", healthz_app(checks), *opts.health_listen)
        try:
            await healthz.start()
        except OSError as err:
            log.error(f"error starting the health check server: {err}")
            return EXIT_FAILURE
        self._servers.append(healthz)
        return None

    async def _new_controllers(self, client: KubeClient) -> list[Controller]:
        options = self.opts.controller_options()
        kubeflow = MPIJobController(client, options)
        controllers: list[Controller] = [kubeflow]
        if self.opts.enable_t9k_controller:
            # The T9k controller shares the Kubeflow one's Event recorder.
            t9k = await t9k_controller_if_served(
                client,
                options,
                recorder=kubeflow.recorder,
                t9k_options=T9kOptions(init_image=self.opts.t9k_init_image),
            )
            if t9k is not None:
                controllers.append(t9k)
        return controllers

    def _new_client(self, user_agent: str, config: ClientConfig) -> KubeClient:
        qps, burst = float(self.opts.kube_api_qps), self.opts.kube_api_burst
        client = KubeClient.from_config(config, qps=qps, burst=burst, user_agent=user_agent)
        self._clients.append(client)
        return client

    # -- leadership ------------------------------------------------------------
    def _new_elector(self, client: KubeClient) -> LeaderElector:
        elector = LeaderElector(
            client,
            leader_election_config(self.opts, self.identity),
            fence=self.fence,
            callbacks=LeaderCallbacks(
                on_started_leading=self._lead,
                on_stopped_leading=lambda: log.info("leadership ended"),
                on_new_leader=self._on_new_leader,
            ),
        )
        self.healthz.set_leader_elector(elector)
        return elector

    async def _elect(self) -> int:
        assert self.elector is not None
        config = self.elector.config
        election = asyncio.create_task(self.elector.run(), name="leader-election")
        stop = asyncio.create_task(self._stopping.wait(), name="stop-signal")
        fatal = asyncio.create_task(self._fatal.wait(), name="fatal")
        await asyncio.wait({election, stop, fatal}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        fatal.cancel()
        if election.done():
            if self._stopping.is_set():
                return EXIT_OK
            log.error("leader election lost", lease=f"{config.namespace}/{config.name}")
            return EXIT_FAILURE
        code = EXIT_OK if self._stopping.is_set() and not self._fatal.is_set() else EXIT_FAILURE
        if self._fatal.is_set():
            log.error(self._fatal_reason)
        election.cancel()
        budget = self.opts.shutdown_drain_seconds + SHUTDOWN_SLACK
        done, _ = await asyncio.wait({election}, timeout=budget)
        if not done:
            log.error("shutdown took too long; exiting anyway", seconds=budget)
        else:
            with contextlib.suppress(asyncio.CancelledError):
                election.result()
            log.info("leader election stopped; lease released", lease=config.name)
        return code

    def _on_new_leader(self, identity: str) -> None:
        if identity and identity != self.identity:
            log.info("new leader elected", leader=identity)

    async def _lead(self) -> None:
        log.info("leading started", identity=self.identity)
        started: list[Controller] = []
        try:
            for controller in self.controllers:
                started.append(controller)
                await controller.start(self.opts.cache_sync_timeout)
            settle_heap()
            # Until leadership ends, we shut down, or an informer dies (logged there).
            died = await self._first_informer_failure()
            self._fail(f"an informer died; exiting so that a restart rebuilds it: {died}")
        except asyncio.CancelledError:
            raise
        except Exception as err:
            log.exception("controller failed")
            self._fail(f"error running controller: {err}")
        finally:
            # The reverse order: the Kubeflow controller, first, owns the shared recorder.
            for controller in reversed(started):
                await self._stop_controller(controller)

    def informer_failures(self) -> list[str]:
        return [f for c in self.controllers for f in c.informer_failures()]

    def worker_failures(self) -> list[str]:
        return [f for c in self.controllers for f in c.worker_failures()]

    async def _first_informer_failure(self) -> str:
        waits = [asyncio.ensure_future(c.wait_for_informer_failure()) for c in self.controllers]
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        return next(iter(done)).result()

    async def _stop_controller(self, controller: Controller) -> None:
        log.info("stopping controller", drain_seconds=self.opts.shutdown_drain_seconds)
        try:
            await controller.stop(self.opts.shutdown_drain_seconds)
        except Exception:
            log.exception("error stopping controller")

    # -- teardown --------------------------------------------------------------
    async def _cleanup(self) -> None:
        await self.loop_lag.stop()
        for server in reversed(self._servers):
            with contextlib.suppress(Exception):
                await server.stop()
        self._servers.clear()
        for client in self._clients:
            with contextlib.suppress(Exception):
                await client.close()
        self._clients.clear()


async def run(opts: ServerOptions, environ: Mapping[str, str] | None = None) -> int:
    return await Operator(opts, environ).run()
