"""The leadership fence on a fake clock, alone and driven by a leader elector."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest
from prometheus_client import CollectorRegistry
from test_client_leaderelection import FakeLeases

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.fence import FencedError, LeadershipFence
from mpi_operator.client.kubeapi import KubeClient
from mpi_operator.client.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
)

LEASE = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/lock"
POD = "/api/v1/namespaces/ns/pods"


@pytest.mark.parametrize(
    ("state", "method", "path", "allowed"),
    [
        ("never led", "GET", POD, True),
        ("never led", "POST", POD, False),
        ("never led", "PUT", LEASE, True),
        ("fresh", "POST", POD, True),
        ("fresh", "DELETE", POD + "/p?x=1", True),
        ("stale", "GET", POD, True),
        ("stale", "PATCH", POD + "/p", False),
        ("stale", "PUT", LEASE, True),
        ("revoked", "POST", POD, False),
        ("revoked", "PUT", LEASE + "?dryRun=All", True),
    ],
)
def test_what_passes(state: str, method: str, path: str, allowed: bool) -> None:
    clock = FakeClock()
    fence = LeadershipFence(5.0, exempt=[LEASE], clock=clock)
    if state != "never led":
        fence.renewed(clock.monotonic())
    if state == "stale":
        clock.step(5.0)
    if state == "revoked":
        fence.revoke()
    assert fence.allows(method, path) is allowed


async def test_a_stale_write_waits_for_a_renewal_or_fails_on_revocation() -> None:
    clock = FakeClock()
    fence = LeadershipFence(5.0, clock=clock)
    with pytest.raises(FencedError, match="not leading: POST"):
        await fence.admit("POST", POD)
    fence.renewed(clock.monotonic())
    await fence.admit("POST", POD)
    clock.step(5.0)
    first = asyncio.create_task(fence.admit("POST", POD))
    await clock.settle()
    assert not first.done(), "held while the elector may still renew"
    fence.renewed(clock.monotonic())
    await clock.settle()
    assert first.done() and first.exception() is None
    clock.step(6.0)
    second = asyncio.create_task(fence.admit("DELETE", POD))
    await clock.settle()
    assert not second.done()
    fence.revoke()
    with pytest.raises(FencedError):
        await second
    assert fence.refused == 2


def _elector(
    leases: FakeLeases, clock: FakeClock, fence: LeadershipFence, lead: LeaderCallbacks
) -> LeaderElector:
    return LeaderElector(
        cast(KubeClient, leases),
        LeaderElectionConfig("ns", "lock", identity="a"),
        lead,
        clock=clock,
        registry=CollectorRegistry(),
        fence=fence,
    )


async def test_the_fence_closes_at_the_renew_deadline_after_the_last_renewal() -> None:
    leases, clock = FakeLeases(), FakeClock()
    fence = LeadershipFence(5.0, clock=clock)
    elector = _elector(leases, clock, fence, LeaderCallbacks(on_started_leading=asyncio.Future))
    task = asyncio.create_task(elector.run())
    await clock.settle()
    assert fence.fresh()
    for _ in range(4):  # renewals every 3 s keep it open
        clock.step(3)
        await clock.settle()
        assert fence.fresh()
    leases.down = True
    last_renewal = clock.monotonic()
    opened = []
    while not task.done():
        clock.step(0.5)
        await clock.settle()
        opened.append((clock.monotonic() - last_renewal, fence.fresh()))
    assert all(fresh == (after < 5.0) for after, fresh in opened), opened
    with pytest.raises(FencedError):
        await fence.admit("POST", POD)


async def test_a_graceful_stop_keeps_renewing_while_the_work_drains() -> None:
    leases, clock = FakeLeases(), FakeClock()
    fence = LeadershipFence(5.0, clock=clock)
    writes_during_drain: list[bool] = []

    async def lead() -> None:
        try:
            await asyncio.Future()
        finally:
            for _ in range(8):  # a 16 s drain, writing every 2 s
                await clock.sleep(2)
                writes_during_drain.append(fence.allows("POST", POD))

    elector = _elector(leases, clock, fence, LeaderCallbacks(on_started_leading=lead))
    task = asyncio.create_task(elector.run())
    await clock.settle()
    task.cancel()
    while not task.done():
        clock.step(0.5)
        await clock.settle()
    assert writes_during_drain == [True] * 8
    assert not fence.allows("POST", POD), "revoked once released"
    assert leases.spec["holderIdentity"] == ""
