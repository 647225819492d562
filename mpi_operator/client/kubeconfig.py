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

import asyncio
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
import yaml

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
from mpi_operator.client.tls import take_tls

log = structlog.get_logger()

IN_CLUSTER = "in-cluster"


class KubeconfigError(Exception):
    """The client configuration cannot be loaded; the message names the file (or the
    in-cluster files) and what is wrong with it."""


@dataclass
class ClientConfig:
    configuration: Configuration
    credentials: Credentials
    #: Built at load (:func:`~mpi_operator.client.tls.take_tls`); None: made from
    #: ``configuration``'s files when a connection is first needed.
    tls: ssl.SSLContext | None = None


@dataclass(frozen=True, slots=True)
class Resolved:
    where: str
    """A kubeconfig path, :data:`IN_CLUSTER`, or "" (``--master`` alone)."""
    origin: str
    """Why: the flag, the variable or the default that chose it."""


def resolve(
    explicit: str | os.PathLike[str] | None, master: str, environ: Mapping[str, str]
) -> Resolved:
    """Where the configuration comes from, with the reference operator's precedence."""
    env = environ.get("KUBECONFIG", "")
    flag = str(explicit) if explicit else ""
    if env and flag and env != flag:
        log.info("$KUBECONFIG takes precedence over --kubeConfig", kubeconfig=env)
    if env or flag:
        chosen = env or flag
        # Like the reference (one explicit path), the first of a path list.
        path = next((p for p in chosen.split(os.pathsep) if p), chosen)
        return Resolved(path, "from $KUBECONFIG" if env else "from --kubeConfig")
    if master:
        return Resolved("", "--master alone")
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return Resolved(IN_CLUSTER, "$KUBERNETES_SERVICE_HOST is set")
    home = Path(environ["HOME"]) if environ.get("HOME") else Path.home()
    return Resolved(
        str(home / ".kube" / "config"),
        "the default: none of --kubeConfig, $KUBECONFIG, --master or an in-cluster "
        "$KUBERNETES_SERVICE_HOST is set",
    )


def check_kubeconfig(path: str, origin: str, context: str | None = None) -> None:
    """Reads the file and checks its shape; raises :class:`KubeconfigError` saying
    what is wrong. Blocking: run it in a thread."""
    where = f"kubeconfig {path} ({origin})"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KubeconfigError(f"{where} does not exist") from None
    except IsADirectoryError:
        raise KubeconfigError(f"{where} is a directory, not a file") from None
    except PermissionError:
        raise KubeconfigError(f"{where} cannot be read: permission denied") from None
    except UnicodeDecodeError:
        raise KubeconfigError(f"{where} is not UTF-8 text") from None
    except OSError as err:
        raise KubeconfigError(f"{where} cannot be read: {err.strerror or err}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or type(err).__name__
        raise KubeconfigError(f"{where} is not valid YAML{at}: {problem}") from None
    if not isinstance(doc, dict):
        got = "empty" if doc is None else f"a YAML {type(doc).__name__}"
        raise KubeconfigError(
            f"{where} is {got}, not a kubeconfig (a mapping with clusters, users, "
            "contexts and current-context)"
        )
    chosen = context or doc.get("current-context")
    if not chosen:
        raise KubeconfigError(f"{where} sets no current-context")
    contexts = doc.get("contexts") or []
    if not isinstance(contexts, list):
        raise KubeconfigError(f"{where}: contexts is a YAML {type(contexts).__name__}, not a list")
    names = [c.get("name") for c in contexts if isinstance(c, dict)]
    if chosen not in names:
        known = ", ".join(map(str, names)) or "none"
        raise KubeconfigError(f"{where}: context {chosen!r} is not in its contexts ({known})")


async def load_client_config(
    kubeconfig: str | os.PathLike[str] | None,
    *,
    environ: Mapping[str, str],
    master: str = "",
    context: str | None = None,
    token_file: str = SERVICE_TOKEN_FILENAME,
    cert_file: str = SERVICE_CERT_FILENAME,
) -> ClientConfig:
    """Configuration and credentials as :func:`resolve` chooses; ``master`` overrides
    the server of whatever was loaded. The one place the configuration is found;
    raises :class:`KubeconfigError`."""
    resolved = resolve(kubeconfig, master, environ)
    config = Configuration()
    tls = None
    if resolved.where == IN_CLUSTER:
        source, initial = _in_cluster(config, environ, token_file, cert_file)
    elif resolved.where:
        await asyncio.to_thread(check_kubeconfig, resolved.where, resolved.origin, context)
        try:
            kube_loader = await load_kube_config(
                config_file=resolved.where, context=context, client_configuration=config
            )
            # Blocks for a few ms, once per load; see take_tls for why not in a thread.
            tls = take_tls(config)
        except Exception as err:
            raise KubeconfigError(
                f"kubeconfig {resolved.where} ({resolved.origin}) cannot be used: {err}"
            ) from err
        source, initial = _kubeconfig_source(kube_loader, config)
    else:
        source, initial = StaticSource(None), Token(None)
    if master:
        config.host = master
    return ClientConfig(config, Credentials(source, initial), tls)


def _in_cluster(
    config: Configuration, environ: Mapping[str, str], token_file: str, cert_file: str
) -> tuple[TokenSource, Token]:
    loader = InClusterConfigLoader(
        token_filename=token_file,
        cert_filename=cert_file,
        try_refresh_token=False,
        environ=dict(environ),
    )
    try:
        loader.load_and_set(config)
    except Exception as err:
        raise KubeconfigError(
            f"in-cluster configuration ($KUBERNETES_SERVICE_HOST is set; token {token_file}, "
            f"CA {cert_file}) cannot be used: {err}"
        ) from err
    return FileSource(token_file), Token(config.api_key.get("BearerToken"))


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
