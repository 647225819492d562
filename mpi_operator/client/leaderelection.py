"""Leader election on a coordination.k8s.io/v1 Lease, as client-go does it.

The algorithm is client-go's ``leaderelection.LeaderElector``:

* **acquire**: every ``retry_period`` (jittered by up to 1.2x) try to take the
  Lease. A Lease held by someone else is respected while it is *valid*:
  validity is judged on our own monotonic clock - ``lease_duration`` after we
  last saw the record change - never by comparing the holder's ``renewTime``
  with our wall clock, so clock skew between nodes cannot cause two leaders.
* **renew**: the leader refreshes ``renewTime`` every ``retry_period``; if it
  cannot within ``renew_deadline`` it steps down (``on_stopped_leading``) and
  cancels the ``on_started_leading`` task. The leader first tries an
  optimistic update against the Lease it last wrote and falls back to a fresh
  GET on conflict. Updates carry the resourceVersion, so two candidates can
  never both win the same round.
* **release** (``release_on_cancel``): on graceful shutdown the leader writes
  an empty holder with a 1 s duration, so a successor takes over at its next
  retry instead of waiting out the lease.

Required ordering, checked at construction: lease_duration > renew_deadline >
1.2 * retry_period.

With a :class:`~mpi_operator.client.fence.LeadershipFence`, every successful
round tells it when the round started, and stepping down revokes it; a
cancelled ``run`` keeps renewing while the leading task drains, then releases.

Deviation: bounding a single renew attempt by the renew deadline uses the
event loop's timer (``asyncio.timeout``), not the injected clock; all lease
validity decisions use the injected clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import uuid
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
from prometheus_client import REGISTRY, CollectorRegistry, Gauge

from mpi_operator.client.clock import Clock, RealClock
from mpi_operator.client.fence import LeadershipFence
from mpi_operator.client.kubeapi import (
    NETWORK_ERRORS,
    REQUEST_ERRORS,
    ApiError,
    KubeClient,
    is_conflict,
    is_not_found,
)
from mpi_operator.client.resourcelock import LeaderElectionRecord, LeaseLock

log = structlog.get_logger()

JITTER_FACTOR = 1.2


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def micro_time(clock: Clock) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds, UTC."""
    return clock.now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class LeaderCallbacks:
    on_started_leading: Callable[[], Awaitable[None]] | None = None
    on_stopped_leading: Callable[[], None] | None = None
    on_new_leader: Callable[[str], None] | None = None


@dataclass
class LeaderElectionConfig:
    namespace: str
    name: str
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 5.0
    retry_period: float = 3.0
    release_on_cancel: bool = True

    def validate(self) -> None:
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError("renew_deadline must exceed 1.2 * retry_period")
        if self.retry_period <= 0 or self.lease_duration < 1:
            raise ValueError("retry_period must be positive and lease_duration at least 1s")
        if not self.identity:
            raise ValueError("identity must not be empty")


# Keyed weakly by registry: an id() could be reused by a later registry.
_gauges: weakref.WeakKeyDictionary[CollectorRegistry, Gauge] = weakref.WeakKeyDictionary()


def _leader_gauge(registry: CollectorRegistry) -> Gauge:
    gauge = _gauges.get(registry)
    if gauge is None:
        gauge = Gauge(
            "mpi_operator_is_leader",
            "1 while this replica holds the leader election lease",
            registry=registry,
        )
        _gauges[registry] = gauge
    return gauge


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        config: LeaderElectionConfig,
        callbacks: LeaderCallbacks | None = None,
        *,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        rng: random.Random | None = None,
        fence: LeadershipFence | None = None,
    ) -> None:
        config.validate()
        self.config = config
        #: Told when each renewal was sent, and when leadership ends.
        self.fence = fence
        self.callbacks = callbacks or LeaderCallbacks()
        self.lock = LeaseLock(client, config.namespace, config.name)
        self.clock: Clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._gauge = _leader_gauge(registry if registry is not None else REGISTRY)
        self._gauge.set(0)
        self.observed_record = LeaderElectionRecord()
        self._observed_raw: dict[str, Any] | None = None
        self.observed_time = 0.0
        self._reported_leader = ""
        self.log = log.bind(lease=f"{config.namespace}/{config.name}", identity=config.identity)

    # -- state -------------------------------------------------------------
    @property
    def identity(self) -> str:
        return self.config.identity

    def is_leader(self) -> bool:
        return self.observed_record.holder_identity == self.config.identity

    def _lease_valid(self) -> bool:
        return self.observed_time + self.config.lease_duration > self.clock.monotonic()

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        self.observed_record = record
        self.observed_time = self.clock.monotonic()

    def _maybe_report_transition(self) -> None:
        holder = self.observed_record.holder_identity
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        if self.callbacks.on_new_leader is not None:
            try:
                self.callbacks.on_new_leader(holder)
            except Exception:
                self.log.exception("on_new_leader failed")

    # -- one round -----------------------------------------------------------
    async def try_acquire_or_renew(self) -> bool:
        started = self.clock.monotonic()
        renewed = await self._try_acquire_or_renew()
        if renewed and self.fence is not None:
            # From before the round: the Lease cannot have been written earlier.
            self.fence.renewed(started)
        return renewed

    def _revoke(self) -> None:
        if self.fence is not None:
            self.fence.revoke()

    async def _try_acquire_or_renew(self) -> bool:
        now = micro_time(self.clock)
        record = LeaderElectionRecord(
            holder_identity=self.config.identity,
            lease_duration_seconds=int(self.config.lease_duration),
            acquire_time=now,
            renew_time=now,
        )
        # Fast path: the leader assumes the Lease is as it last wrote it.
        if self.is_leader() and self._lease_valid() and self.lock.lease is not None:
            record.acquire_time = self.observed_record.acquire_time
            record.leader_transitions = self.observed_record.leader_transitions
            try:
                await self.lock.update(record)
                self._set_observed(record)
                return True
            except REQUEST_ERRORS as err:
                self.log.info("optimistic lease update failed; re-reading", error=str(err))
        try:
            old, raw = await self.lock.get()
        except ApiError as err:
            if not is_not_found(err):
                self.log.warning("error retrieving lease", error=str(err))
                return False
            try:
                await self.lock.create(record)
            except REQUEST_ERRORS as cerr:
                self.log.info("error creating lease", error=str(cerr))
                return False
            self._set_observed(record)
            return True
        except NETWORK_ERRORS as err:
            self.log.warning("error retrieving lease", error=repr(err))
            return False
        if raw != self._observed_raw:
            self._set_observed(old)
            self._observed_raw = raw
        if old.holder_identity and self._lease_valid() and not self.is_leader():
            return False
        if self.is_leader():
            record.acquire_time = old.acquire_time
            record.leader_transitions = old.leader_transitions
        else:
            record.leader_transitions = old.leader_transitions + 1
        try:
            await self.lock.update(record)
        except REQUEST_ERRORS as err:
            self.log.info("failed to update lease", error=str(err))
            return False
        self._set_observed(record)
        return True

    async def release(self) -> bool:
        if not self.is_leader():
            return True
        now = micro_time(self.clock)
        record = LeaderElectionRecord(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            leader_transitions=self.observed_record.leader_transitions,
        )
        try:
            try:
                await self.lock.update(record)
            except ApiError as err:
                if not is_conflict(err):
                    raise
                # Deviation: client-go gives up here. Our lease keeper, cancelled at
                # shutdown, may have renewed after our last read: release if still ours.
                current, _ = await self.lock.get()
                if current.holder_identity != self.config.identity:
                    return True
                await self.lock.update(record)
        except REQUEST_ERRORS as err:
            self.log.error("failed to release lease", error=str(err))
            return False
        self._set_observed(record)
        return True

    # -- loops ---------------------------------------------------------------
    def _jittered_retry(self) -> float:
        period = self.config.retry_period
        return period + self._rng.random() * JITTER_FACTOR * period

    async def _acquire(self) -> None:
        self.log.info("attempting to acquire leader lease")
        while True:
            acquired = await self.try_acquire_or_renew()
            self._maybe_report_transition()
            if acquired:
                self.log.info("successfully acquired lease")
                return
            await self.clock.sleep(self._jittered_retry())

    async def _renew_within_deadline(self) -> bool:
        deadline = self.clock.monotonic() + self.config.renew_deadline
        while True:
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                return False
            try:
                async with asyncio.timeout(remaining):
                    if await self.try_acquire_or_renew():
                        return True
            except TimeoutError:
                return False
            if self.clock.monotonic() + self.config.retry_period >= deadline:
                return False
            await self.clock.sleep(self.config.retry_period)

    async def _renew(self) -> None:
        while True:
            renewed = await self._renew_within_deadline()
            self._maybe_report_transition()
            if not renewed:
                self.log.info("failed to renew lease; stepping down")
                return
            await self.clock.sleep(self.config.retry_period)

    async def run(self) -> None:
        """Campaign, lead until leadership is lost, then return.

        Cancelling ``run`` while leading stops the leading task, renewing the
        Lease while it drains, then releases the Lease (if configured)."""
        leading_task: asyncio.Task[None] | None = None
        lost = False
        try:
            await self._acquire()
            self._gauge.set(1)
            if self.callbacks.on_started_leading is not None:
                leading_task = asyncio.create_task(
                    self._run_leading(self.callbacks.on_started_leading),
                    name="leader-work",
                )
            await self._renew()
            lost = True
        finally:
            self._gauge.set(0)
            if lost:
                self._revoke()
            if leading_task is not None:
                await self._stop_leading(leading_task, keep_lease=not lost)
            self._revoke()
            if self.config.release_on_cancel:
                # Shielded so a cancelled run still hands the lease over.
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.shield(self.release())
            if self.callbacks.on_stopped_leading is not None:
                try:
                    self.callbacks.on_stopped_leading()
                except Exception:
                    self.log.exception("on_stopped_leading failed")

    async def _stop_leading(self, leading_task: asyncio.Task[None], *, keep_lease: bool) -> None:
        """Cancels the leading task and waits for it (its drain). On a graceful stop
        the Lease is still renewed meanwhile, so that the drain's writes pass the
        fence; controller-runtime's manager also stops leader election last."""

        async def keep() -> None:
            await self._renew()
            self._revoke()

        keeper = asyncio.create_task(keep(), name="lease-keeper") if keep_lease else None
        leading_task.cancel()
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await leading_task
        finally:
            if keeper is not None:
                keeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await keeper

    async def _run_leading(self, fn: Callable[[], Awaitable[None]]) -> None:
        try:
            await fn()
        except asyncio.CancelledError:
            raise
        except Exception:
            self.log.exception("on_started_leading failed")

    # -- health --------------------------------------------------------------
    def check(self, max_tolerable_expired_lease: float) -> str | None:
        """None when healthy; an error message when leading on a lapsed lease."""
        if not self.is_leader():
            return None
        # client-go measures from the last successful observation plus the
        # lease duration (not the renew deadline); so do we.
        if self.clock.monotonic() - self.observed_time > (
            self.config.lease_duration + max_tolerable_expired_lease
        ):
            return f"failed election to renew leadership on lease {self.config.name}"
        return None


class HealthzAdaptor:
    """A health check for /healthz, wired to an elector once it exists."""

    name = "leaderElection"

    def __init__(self, timeout: float = 20.0) -> None:
        self.timeout = timeout
        self._elector: LeaderElector | None = None

    def set_leader_elector(self, elector: LeaderElector) -> None:
        self._elector = elector

    def check(self) -> str | None:
        if self._elector is None:
            return None
        return self._elector.check(self.timeout)
