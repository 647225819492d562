"""Where the client's configuration comes from, decided in one place.

:func:`resolve` applies the reference operator's precedence (``$KUBECONFIG``
over ``--kubeConfig``; with neither and no ``--master``, in-cluster when
``KUBERNETES_SERVICE_HOST`` is set, else ``~/.kube/config``), and
:func:`load_client_config` loads it into a kubernetes_asyncio ``Configuration``
(server, TLS) plus the :class:`~mpi_operator.client.credentials.Credentials`
that keep its bearer token fresh. The kubeconfig loader is kept (inside the
token source) so that exec plugins and OIDC providers can be asked again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from mpi_operator.client.credentials import (
    Credentials,
    ExecSource,
    FileSource,
    OidcSource,
    StaticSource,
    Token,
    TokenSource,
    jwt_expiry,
)
from mpi_operator.client.lean_imports import (
    SERVICE_CERT_FILENAME,
    SERVICE_TOKEN_FILENAME,
    Configuration,
    InClusterConfigLoader,
    load_kube_config,
)

log = structlog.get_logger()

IN_CLUSTER = "in-cluster"


@dataclass
class ClientConfig:
    configuration: Configuration
    credentials: Credentials


def resolve(
    explicit: str | os.PathLike[str] | None, master: str, environ: Mapping[str, str]
) -> str:
    """The kubeconfig path to load, or :data:`IN_CLUSTER`, or "" (``master`` alone)."""
    env = environ.get("KUBECONFIG", "")
    flag = str(explicit) if explicit else ""
    if env and flag and env != flag:
        log.info("$KUBECONFIG takes precedence over --kubeConfig", kubeconfig=env)
    chosen = env or flag
    if chosen:
        # Like the reference (one explicit path), the first of a path list.
        return next((p for p in chosen.split(os.pathsep) if p), chosen)
    if master:
        return ""
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return IN_CLUSTER
    return str(Path.home() / ".kube" / "config")


async def load_client_config(
    kubeconfig: str | os.PathLike[str] | None = None,
    *,
    master: str = "",
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    token_file: str = SERVICE_TOKEN_FILENAME,
    cert_file: str = SERVICE_CERT_FILENAME,
) -> ClientConfig:
    """Configuration and credentials as :func:`resolve` chooses; ``master`` overrides
    the server of whatever was loaded."""
    env = os.environ if environ is None else environ
    where = resolve(kubeconfig, master, env)
    config = Configuration()
    if where == IN_CLUSTER:
        loader = InClusterConfigLoader(
            token_filename=token_file,
            cert_filename=cert_file,
            try_refresh_token=False,
            environ=dict(env),
        )
        loader.load_and_set(config)
        source: TokenSource = FileSource(token_file)
        initial = Token(config.api_key.get("BearerToken"))
    elif where:
        kube_loader = await load_kube_config(
            config_file=where, context=context, client_configuration=config
        )
        source, initial = _kubeconfig_source(kube_loader, config)
    else:
        source, initial = StaticSource(None), Token(None)
    if master:
        config.host = master
    return ClientConfig(config, Credentials(source, initial))


def _kubeconfig_source(loader: Any, config: Configuration) -> tuple[TokenSource, Token]:
    """The source matching the user entry kubernetes_asyncio's loader authenticated with
    (its order: gcp, oidc, exec, token/tokenFile, basic); the token it got first."""
    user = loader._user
    header = config.api_key.get("BearerToken")
    if user is None or header is None:
        return StaticSource(header), Token(header)
    if loader.provider == "oidc":
        return OidcSource(loader), Token(header, jwt_expiry(header.removeprefix("Bearer ")))
    if loader.provider != "gcp" and "exec" in user:
        expiry = getattr(loader, "exec_plugin_expiry", None)
        return ExecSource(user["exec"]), Token(header, expiry)
    if loader.provider is None and "tokenFile" in user and not user.safe_get("token"):
        base = loader._get_base_path(user.path)
        return FileSource(os.path.join(base, str(user["tokenFile"]))), Token(header)
    # A fixed token, basic auth, or the legacy gcp provider: loaded once.
    return StaticSource(header), Token(header)
