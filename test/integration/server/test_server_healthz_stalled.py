"""``/healthz`` fails while a controller's informer cannot list, against a real
kube-apiserver: the operator's own check (its controller's ``informer_failures``) on a
client whose ServiceAccount may not list yet, with the threshold shortened for the test
(the process uses :data:`~mpi_operator.client.reflector.STALLED_AFTER`, a minute)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from devcluster import LocalCluster
from devcluster.polling import eventually
from mpi_operator.client import KubeClient
from mpi_operator.client.kubeapi import ROLE_BINDINGS, ROLES, SERVICE_ACCOUNTS
from mpi_operator.controller.kubeflow.controller import MPIJobController
from mpi_operator.controller.options import ControllerOptions
from mpi_operator.server.http import InformersCheck, healthz_app

THRESHOLD = 3.0
ACCOUNT = "not-yet-allowed"


async def _allow_reading(kube: KubeClient, ns: str) -> None:
    await kube.create(
        ROLES,
        ns,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "read-all"},
            "rules": [
                {
                    "apiGroups": ["", "batch", "kubeflow.org"],
                    "resources": ["*"],
                    "verbs": ["get", "list", "watch"],
                }
            ],
        },
    )
    await kube.create(
        ROLE_BINDINGS,
        ns,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "read-all"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "read-all",
            },
            "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": ns}],
        },
    )


async def test_healthz_fails_while_an_informer_cannot_list_and_recovers_after(
    api_cluster: LocalCluster, namespace: str, kube: KubeClient, tmp_path: Path
) -> None:
    await kube.create(
        SERVICE_ACCOUNTS,
        namespace,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": ACCOUNT}},
    )
    config = api_cluster.token_kubeconfig(namespace, ACCOUNT, tmp_path / "sa.kubeconfig")
    client = await KubeClient.from_kubeconfig(config)
    controller = MPIJobController(
        client, ControllerOptions(namespace=namespace), registry=CollectorRegistry()
    )
    controller.factory.stalled_after = THRESHOLD
    health: TestClient[web.Request, web.Application] = TestClient(
        TestServer(healthz_app([InformersCheck(controller.informer_failures)]))
    )
    await health.start_server()
    started = time.monotonic()
    controller.factory.start()
    try:
        # Every list is forbidden: healthy until the threshold, failing after it.
        while (resp := await health.get("/healthz?verbose")).status == 200:
            assert time.monotonic() - started < THRESHOLD + 15, "/healthz never failed"
            await asyncio.sleep(0.1)
        failed_after = time.monotonic() - started
        body = await resp.text()
        assert resp.status == 500
        assert failed_after >= THRESHOLD
        assert "[-]informers failed" in body

        # A stalled informer is not a dead one: allowed to list, it syncs and heals.
        await _allow_reading(kube, namespace)

        async def healthy() -> bool:
            return (await health.get("/healthz")).status == 200

        await eventually(healthy, within=30, what="/healthz healthy again")
        assert controller.informer_failures() == []
        assert await controller.factory.wait_for_cache_sync(10)
    finally:
        await health.close()
        await controller.factory.shutdown()
        await client.close()
