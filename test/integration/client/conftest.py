"""Fixtures for the client machinery's tests against a real kube-apiserver.

``api_cluster`` and ``namespace`` come from test/conftest.py (etcd +
kube-apiserver started from real binaries). Everything here talks to that
server through :class:`~mpi_operator.client.kubeapi.KubeClient`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from harness import api_client

from mpi_operator.client.kubeapi import NAMESPACES, KubeClient, is_already_exists


@pytest.fixture
async def kube(api_cluster: Any) -> AsyncIterator[KubeClient]:
    """Overrides test/integration's: these tests make hundreds of requests."""
    async with api_client(api_cluster, qps=500, burst=1000) as client:
        yield client


@pytest.fixture
async def ns(kube: KubeClient, namespace: str) -> str:
    """The test's namespace, created if the shared fixture only named it."""
    try:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        await kube.create(NAMESPACES, None, body)
    except Exception as err:
        if not is_already_exists(err):
            raise
    return namespace
