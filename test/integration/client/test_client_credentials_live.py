"""A rotated token file is picked up: in-cluster (the projected ServiceAccount token)
and through a kubeconfig's ``tokenFile``, against a real API server.

The kubelet replaces the projected token before it expires; here the test writes a
new ServiceAccount token (TokenRequest API, bound to a Secret) into the file and
then revokes the old one by deleting its Secret. The next request is refused with
401, the file is re-read and the request sent again: the caller never sees it.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from pathlib import Path

import pytest
import yaml

from devcluster import LocalCluster, components
from mpi_operator.client.kubeapi import NAMESPACES, KubeClient
from mpi_operator.client.kubeconfig import load_client_config

pytestmark = pytest.mark.cluster


def _token(cluster: LocalCluster, ns: str, account: str, holder: str) -> str:
    cluster.kubectl("-n", ns, "create", "secret", "generic", holder)
    out = cluster.kubectl(
        "-n",
        ns,
        "create",
        "token",
        account,
        "--bound-object-kind=Secret",
        f"--bound-object-name={holder}",
        "--duration=1h",
    )
    return out.stdout.strip()


@pytest.mark.parametrize("how", ["in-cluster", "kubeconfig tokenFile"])
async def test_a_rotated_token_file_is_reread_after_a_401(
    api_cluster: LocalCluster, namespace: str, tmp_path: Path, how: str
) -> None:
    account = "file-token"
    api_cluster.cluster_admin_service_account(namespace, account)
    token_file = tmp_path / "token"
    token_file.write_text(_token(api_cluster, namespace, account, "holder-1"))
    if how == "in-cluster":
        server = urllib.parse.urlsplit(api_cluster.server)
        env = {
            "KUBERNETES_SERVICE_HOST": str(server.hostname),
            "KUBERNETES_SERVICE_PORT": str(server.port),
        }
        config = await load_client_config(
            None, environ=env, token_file=str(token_file), cert_file=str(api_cluster.pki.ca_crt)
        )
    else:
        path = tmp_path / "kubeconfig"
        doc = components.kubeconfig(
            api_cluster.server, api_cluster.pki.ca_crt, account, {"tokenFile": str(token_file)}
        )
        path.write_text(yaml.safe_dump(doc))
        config = await load_client_config(path, environ={})
    async with KubeClient.from_config(config) as kube:
        assert (await kube.get(NAMESPACES, None, namespace))["metadata"]["name"] == namespace
        token_file.write_text(_token(api_cluster, namespace, account, "holder-2"))
        api_cluster.kubectl("-n", namespace, "delete", "secret", "holder-1")
        # kube-apiserver caches a token's success for 10 s: the refusal comes within that.
        deadline = time.monotonic() + 30
        while config.credentials.refreshes == 0:
            assert time.monotonic() < deadline, "the revoked token was never refused"
            got = await kube.get(NAMESPACES, None, namespace)  # never fails
            assert got["metadata"]["name"] == namespace
            await asyncio.sleep(0.2)
        assert config.credentials.refreshes == 1
