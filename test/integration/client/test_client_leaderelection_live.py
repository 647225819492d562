"""Two electors contending for one Lease on a real API server."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from devcluster.polling import eventually
from mpi_operator.client.kubeapi import LEASES, KubeClient
from mpi_operator.client.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
)

pytestmark = pytest.mark.cluster

LEASE = 4.0
RENEW = 2.0
RETRY = 0.4


class Candidate:
    def __init__(self, kube: KubeClient, ns: str, identity: str, board: dict[str, bool]) -> None:
        self.identity = identity
        self.board = board
        self.registry = CollectorRegistry()
        self.new_leaders: list[str] = []
        self.elector = LeaderElector(
            kube,
            LeaderElectionConfig(
                ns,
                "mpi-operator",
                identity=identity,
                lease_duration=LEASE,
                renew_deadline=RENEW,
                retry_period=RETRY,
                release_on_cancel=True,
            ),
            LeaderCallbacks(
                on_started_leading=self.lead,
                on_stopped_leading=self.stopped,
                on_new_leader=self.new_leaders.append,
            ),
            registry=self.registry,
        )
        self.task: asyncio.Task[None] = asyncio.create_task(self.elector.run())

    async def lead(self) -> None:
        self.board[self.identity] = True
        await asyncio.Event().wait()

    def stopped(self) -> None:
        self.board[self.identity] = False

    def leading(self) -> bool:
        return self.board.get(self.identity, False)

    def gauge(self) -> float | None:
        return self.registry.get_sample_value("mpi_operator_is_leader")

    async def stop(self, *, crash: bool = False) -> None:
        if crash:
            # A crashed process cannot release its Lease.
            self.elector.config.release_on_cancel = False
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


async def test_exactly_one_leader_and_takeover_after_crash_and_after_release(
    kube: KubeClient, ns: str
) -> None:
    board: dict[str, bool] = {}
    overlaps: list[dict[str, bool]] = []

    async def watchdog() -> None:
        while True:
            if sum(board.values()) > 1:
                overlaps.append(dict(board))
            await asyncio.sleep(0.01)

    dog = asyncio.create_task(watchdog())
    a = Candidate(kube, ns, "a", board)
    b = Candidate(kube, ns, "b", board)
    c: Candidate | None = None
    try:
        await eventually(lambda: a.leading() or b.leading(), within=10, what="a leader")
        leader, follower = (a, b) if a.leading() else (b, a)
        assert leader.gauge() == 1 and follower.gauge() == 0
        assert leader.elector.check(0) is None
        lease: dict[str, Any] = await kube.get(LEASES, ns, "mpi-operator")
        assert lease["spec"]["holderIdentity"] == leader.identity
        await eventually(lambda: follower.new_leaders == [leader.identity], what="new leader")

        # Hold steady over two renewals: the follower must not take over.
        renewals: list[str] = []

        async def renewed_twice() -> bool:
            got = await kube.get(LEASES, ns, "mpi-operator")
            stamp = got["spec"]["renewTime"]
            if stamp not in renewals:
                renewals.append(stamp)
            return len(renewals) >= 3

        await eventually(renewed_twice, within=5 * RETRY + 2, what="two lease renewals")
        assert leader.leading() and not follower.leading()

        # The leader crashes: the follower waits out the lease, then leads.
        crashed = time.monotonic()
        await leader.stop(crash=True)
        await eventually(follower.leading, within=LEASE + 5, what="takeover after crash")
        took = time.monotonic() - crashed
        assert LEASE - 2.2 * RETRY - 0.5 < took < LEASE + 3, took

        # A graceful shutdown releases the lease: a new candidate takes over at once.
        c = Candidate(kube, ns, "c", board)
        await eventually(
            lambda: c.elector.observed_record.holder_identity == follower.identity,
            what="c to see the holder",
        )
        assert not c.leading()
        released = time.monotonic()
        await follower.stop()
        await eventually(c.leading, within=LEASE, what="takeover after release")
        assert time.monotonic() - released < LEASE / 2
        lease = await kube.get(LEASES, ns, "mpi-operator")
        assert lease["spec"]["holderIdentity"] == "c"
        assert lease["spec"]["leaseTransitions"] >= 2
        assert overlaps == [], "two candidates led at the same time"
    finally:
        dog.cancel()
        for cand in (a, b, c):
            if cand is not None:
                await cand.stop()
