"""The rate-limited REST client against a real API server."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mpi_operator.client.kubeapi import CONFIGMAPS, ApiError, KubeClient, is_not_found

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
