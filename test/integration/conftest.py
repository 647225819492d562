"""Fixtures of every integration test folder (api_cluster and namespace come from
test/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from harness import api_client

from mpi_operator.client import KubeClient


@pytest.fixture
async def kube(api_cluster: Any) -> AsyncIterator[KubeClient]:
    """The test's own client (client-go's default 5 QPS, burst 10)."""
    async with api_client(api_cluster) as client:
        yield client
