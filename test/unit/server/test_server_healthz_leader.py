"""/healthz reflects the leader elector: failing while leading on a lapsed lease."""

from __future__ import annotations

from typing import Any, cast

from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.kubeapi import KubeClient
from mpi_operator.client.leaderelection import HealthzAdaptor, LeaderElector
from mpi_operator.client.resourcelock import LeaderElectionRecord
from mpi_operator.server.http import healthz_app
from mpi_operator.server.options import leader_election_config, parse_args


async def test_healthz_fails_when_leading_without_renewing() -> None:
    clock = FakeClock()
    opts = parse_args([], environ={})
    config = leader_election_config(opts, identity="me")
    elector = LeaderElector(
        cast(KubeClient, object()), config, clock=clock, registry=CollectorRegistry()
    )
    adaptor = HealthzAdaptor(20.0)
    adaptor.set_leader_elector(elector)
    client: TestClient[Any, Any] = TestClient(TestServer(healthz_app([adaptor])))
    await client.start_server()
    try:
        assert (await client.get("/healthz")).status == 200
        elector._set_observed(LeaderElectionRecord(holder_identity="me"))
        clock.step(opts.lease_duration + 19)
        assert (await client.get("/healthz")).status == 200
        clock.step(2)  # lease duration + 20 s tolerance exceeded
        resp = await client.get("/healthz")
        assert resp.status == 500
        assert "[-]leaderElection failed" in await resp.text()
        # A follower is always healthy.
        elector._set_observed(LeaderElectionRecord(holder_identity="someone-else"))
        clock.step(100)
        assert (await client.get("/healthz")).status == 200
    finally:
        await client.close()
