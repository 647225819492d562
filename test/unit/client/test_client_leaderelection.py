"""Leader election decisions, driven by a fake clock over an in-memory Lease.

The fake stands in for the API server's optimistic concurrency only (a
replace with a stale resourceVersion is a 409); the real thing is exercised in
test/integration/client/test_client_leaderelection_live.py.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any, cast

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.kubeapi import ApiError, KubeClient
from mpi_operator.client.leaderelection import (
    HealthzAdaptor,
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
)


class FakeLeases:
    def __init__(self) -> None:
        self.obj: dict[str, Any] | None = None
        self.rv = 0
        self.down = False
        self.writes = 0

    def _check(self) -> None:
        if self.down:
            raise aiohttp.ClientConnectionError("api server unreachable")

    async def get(self, resource: Any, ns: str | None, name: str) -> dict[str, Any]:
        self._check()
        if self.obj is None:
            raise ApiError(404, {"reason": "NotFound", "message": "not found"})
        return copy.deepcopy(self.obj)

    async def create(self, resource: Any, ns: str | None, body: dict[str, Any]) -> dict[str, Any]:
        self._check()
        if self.obj is not None:
            raise ApiError(409, {"reason": "AlreadyExists", "message": "exists"})
        return self._store(body)

    async def replace(
        self, resource: Any, ns: str | None, name: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        self._check()
        assert self.obj is not None
        if body["metadata"].get("resourceVersion") != self.obj["metadata"]["resourceVersion"]:
            raise ApiError(409, {"reason": "Conflict", "message": "object was modified"})
        return self._store(body)

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        self.writes += 1
        obj = copy.deepcopy(body)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.obj = obj
        return copy.deepcopy(obj)

    @property
    def spec(self) -> dict[str, Any]:
        assert self.obj is not None
        spec: dict[str, Any] = self.obj["spec"]
        return spec


def elector(
    leases: FakeLeases,
    clock: FakeClock,
    identity: str,
    callbacks: LeaderCallbacks | None = None,
    registry: CollectorRegistry | None = None,
) -> LeaderElector:
    return LeaderElector(
        cast(KubeClient, leases),
        LeaderElectionConfig("ns", "lock", identity=identity),
        callbacks,
        clock=clock,
        registry=registry or CollectorRegistry(),
    )


async def test_first_candidate_creates_the_lease_and_leads() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a = elector(leases, clock, "a")
    assert await a.try_acquire_or_renew()
    assert a.is_leader()
    assert leases.spec["holderIdentity"] == "a"
    assert leases.spec["leaseDurationSeconds"] == 15
    assert leases.spec["leaseTransitions"] == 0
    assert leases.spec["renewTime"] == "2026-01-01T00:00:00.000000Z"


async def test_a_held_lease_is_respected_until_it_expires_on_the_local_clock() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    clock.step(14.9)
    assert not await b.try_acquire_or_renew()
    clock.step(0.2)
    assert await b.try_acquire_or_renew()
    assert leases.spec["holderIdentity"] == "b"
    assert leases.spec["leaseTransitions"] == 1


async def test_renewals_by_the_holder_restart_the_followers_countdown() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")
    await a.try_acquire_or_renew()
    await b.try_acquire_or_renew()
    clock.step(10)
    assert await a.try_acquire_or_renew()  # renew: the record changes
    assert not await b.try_acquire_or_renew()  # b notices at t=10
    clock.step(14)
    assert not await b.try_acquire_or_renew()
    clock.step(1.1)
    assert await b.try_acquire_or_renew()


async def test_skewed_wall_clock_in_the_record_does_not_matter() -> None:
    store, clock = FakeLeases(), FakeClock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    await a.try_acquire_or_renew()
    store.spec["renewTime"] = "2000-01-01T00:00:00.000000Z"  # holder's clock far behind
    assert not await b.try_acquire_or_renew(), "validity is judged on b's own clock"


async def test_released_lease_is_taken_over_at_once() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")
    await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    assert await a.release()
    assert not a.is_leader()
    assert leases.spec["holderIdentity"] == ""
    assert leases.spec["leaseDurationSeconds"] == 1
    assert await b.try_acquire_or_renew()


async def test_only_one_of_two_simultaneous_candidates_wins_an_expired_lease() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a = elector(leases, clock, "a")
    b, c = elector(leases, clock, "b"), elector(leases, clock, "c")
    await a.try_acquire_or_renew()
    await b.try_acquire_or_renew()
    await c.try_acquire_or_renew()
    clock.step(16)
    results = await asyncio.gather(b.try_acquire_or_renew(), c.try_acquire_or_renew())
    assert sorted(results) == [False, True]
    assert leases.spec["leaseTransitions"] == 1


async def test_healthz_fails_only_when_leading_on_a_lease_lapsed_past_tolerance() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")
    health = HealthzAdaptor(timeout=20)
    assert health.check() is None, "no elector yet: healthy"
    health.set_leader_elector(a)
    await a.try_acquire_or_renew()
    await b.try_acquire_or_renew()
    clock.step(35)
    assert health.check() is None
    clock.step(0.1)
    assert health.check() == "failed election to renew leadership on lease lock"
    assert b.check(0) is None, "followers are always healthy"


async def test_run_leads_then_steps_down_when_renewals_fail_past_the_deadline() -> None:
    leases, clock = FakeLeases(), FakeClock()
    registry = CollectorRegistry()
    events: list[str] = []

    async def lead() -> None:
        events.append("started")
        try:
            await asyncio.Event().wait()
        finally:
            events.append("work cancelled")

    callbacks = LeaderCallbacks(
        on_started_leading=lead,
        on_stopped_leading=lambda: events.append("stopped"),
        on_new_leader=lambda who: events.append(f"leader={who}"),
    )
    a = elector(leases, clock, "a", callbacks, registry)
    task = asyncio.create_task(a.run())
    await clock.settle()
    assert events == ["leader=a", "started"]
    assert registry.get_sample_value("mpi_operator_is_leader") == 1
    for _ in range(3):  # healthy renewals every retry period
        clock.step(3)
        await clock.settle()
    assert not task.done()
    leases.down = True
    for _ in range(10):
        clock.step(1)
        await clock.settle()
    assert task.done()
    assert events[-2:] == ["work cancelled", "stopped"]
    assert registry.get_sample_value("mpi_operator_is_leader") == 0


async def test_cancelling_run_releases_the_lease() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a = elector(leases, clock, "a")
    task = asyncio.create_task(a.run())
    await clock.settle()
    assert leases.spec["holderIdentity"] == "a"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert leases.spec["holderIdentity"] == ""


def test_inconsistent_timings_are_rejected() -> None:
    with pytest.raises(ValueError):
        LeaderElectionConfig("ns", "l", identity="a", lease_duration=5, renew_deadline=5).validate()
    with pytest.raises(ValueError):
        LeaderElectionConfig("ns", "l", identity="a", renew_deadline=3, retry_period=3).validate()
