"""The rate-limited REST client against a real API server."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from mpi_operator.client.kubeapi import CONFIGMAPS, ApiError, KubeClient, is_not_found
from mpi_operator.client.transport import REQUEST_CONNECTIONS

pytestmark = pytest.mark.cluster


async def test_client_side_rate_limit_applies_to_every_request(api_cluster: Any) -> None:
    kube = await KubeClient.from_kubeconfig(api_cluster.kubeconfig, qps=4, burst=2)
    try:
        start = time.monotonic()
        for _ in range(6):
            await kube.list(CONFIGMAPS, "default", limit=1)
        # Two requests ride the burst, the other four wait a quarter second each.
        assert time.monotonic() - start >= 0.95
    finally:
        await kube.close()


async def test_errors_carry_status_and_reason(kube: KubeClient, ns: str) -> None:
    with pytest.raises(ApiError) as info:
        await kube.get(CONFIGMAPS, ns, "missing")
    assert is_not_found(info.value)
    assert info.value.reason == "NotFound"


async def test_a_create_whose_answer_is_discarded_creates_and_returns_nothing(
    kube: KubeClient, ns: str
) -> None:
    body = {"metadata": {"name": "unread"}, "data": {"k": "v"}}
    assert await kube.create(CONFIGMAPS, ns, body, discard_answer=True) == {}
    assert (await kube.get(CONFIGMAPS, ns, "unread"))["data"] == {"k": "v"}
    with pytest.raises(ApiError) as info:  # an error's answer is still read
        await kube.create(CONFIGMAPS, ns, body, discard_answer=True)
    assert info.value.reason == "AlreadyExists"


async def test_many_watches_never_hold_requests_back(kube: KubeClient, ns: str) -> None:
    """Each watch holds an HTTP/1.1 connection for as long as it runs (a namespace list
    of 20 namespaces opens over 100). Watches take connections of their own, so more
    watches than the request pool's connections still leave room for requests."""
    watches = 3 * REQUEST_CONNECTIONS + 30  # past the request pool and the old 100
    await kube.create(CONFIGMAPS, ns, {"metadata": {"name": "seen"}, "data": {}})
    started: set[int] = set()
    all_started = asyncio.Event()

    async def watch(i: int) -> None:
        async for _event in kube.watch(CONFIGMAPS, ns, timeout_seconds=120):
            started.add(i)  # the existing ConfigMap's ADDED: this watch is open
            if len(started) == watches:
                all_started.set()

    tasks = [asyncio.create_task(watch(i)) for i in range(watches)]
    try:
        await asyncio.wait_for(all_started.wait(), 60)
        t0 = time.monotonic()
        await asyncio.wait_for(kube.get(CONFIGMAPS, ns, "seen"), 10)
        made = [kube.create(CONFIGMAPS, ns, {"metadata": {"name": f"c{i}"}}) for i in range(40)]
        await asyncio.wait_for(asyncio.gather(*made), 20)
        assert time.monotonic() - t0 < 20
        assert all(not t.done() for t in tasks), "every watch is still open"
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
