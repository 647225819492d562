"""A kubeconfig's embedded TLS material is loaded into memory and leaves no file
behind, even for a process that is killed later; files it names by path stay."""

from __future__ import annotations

import base64
import ssl
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from local_http import serving

from devcluster.pki import Pki, generate
from mpi_operator.client.kubeconfig import KubeconfigError, load_client_config
from mpi_operator.client.transport import ApiTransport


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return generate(tmp_path / "pki")


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The process's temp directory, where the kubeconfig loader writes its files."""
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(
    path: Path, server: str, cluster: dict[str, Any], user: dict[str, Any]
) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                "clusters": [{"name": "k", "cluster": {"server": server, **cluster}}],
                "users": [{"name": "u", "user": user}],
            }
        )
    )
    return path


def embedded(pki: Pki) -> tuple[dict[str, str], dict[str, str]]:
    cluster = {"certificate-authority-data": b64(pki.ca_crt)}
    user = {
        "client-certificate-data": b64(pki.admin_crt),
        "client-key-data": b64(pki.admin_key),
    }
    return cluster, user


def server_tls(pki: Pki) -> ssl.SSLContext:
    """An API server's: its serving certificate, and client certificates required."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki.ca_crt))
    context.load_cert_chain(str(pki.serving_crt), str(pki.serving_key))
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def whoami_app() -> web.Application:
    async def whoami(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(pair for rdn in (peer or {}).get("subject", ()) for pair in rdn)
        return web.json_response({"user": subject.get("commonName")})

    app = web.Application()
    app.router.add_get("/whoami", whoami)
    return app


async def test_embedded_material_authenticates_from_memory_and_no_file_is_left(
    tmp_path: Path, pki: Pki, temp_dir: Path
) -> None:
    async with serving(whoami_app(), server_tls(pki)) as url:
        cluster, user = embedded(pki)
        path = write_kubeconfig(tmp_path / "kubeconfig", url, cluster, user)
        for _ in range(2):  # a second load in the same process writes and deletes again
            config = await load_client_config(path, environ={})
            assert leftovers(temp_dir) == []
            assert config.tls is not None
            assert config.configuration.cert_file is None
            assert config.configuration.key_file is None
            assert config.configuration.ssl_ca_cert is None
            async with ApiTransport.from_config(config, qps=-1) as transport:
                assert await transport.request("GET", "/whoami") == {"user": "admin"}


async def test_files_named_by_path_are_used_and_left_alone(
    tmp_path: Path, pki: Pki, temp_dir: Path
) -> None:
    async with serving(whoami_app(), server_tls(pki)) as url:
        cluster = {"certificate-authority": str(pki.ca_crt)}
        user = {"client-certificate": str(pki.admin_crt), "client-key": str(pki.admin_key)}
        path = write_kubeconfig(tmp_path / "kubeconfig", url, cluster, user)
        config = await load_client_config(path, environ={})
        assert config.configuration.cert_file == str(pki.admin_crt)
        async with ApiTransport.from_config(config, qps=-1) as transport:
            assert await transport.request("GET", "/whoami") == {"user": "admin"}
    assert pki.admin_key.exists()
    assert leftovers(temp_dir) == []


async def test_a_key_that_does_not_load_names_the_kubeconfig_and_leaves_no_file(
    tmp_path: Path, pki: Pki, temp_dir: Path
) -> None:
    cluster, user = embedded(pki)
    user["client-key-data"] = b64(pki.ca_crt)  # a certificate, not a key
    path = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1", cluster, user)
    with pytest.raises(KubeconfigError, match=f"kubeconfig {path} \\(from --kubeConfig\\)"):
        await load_client_config(path, environ={})
    assert leftovers(temp_dir) == []
