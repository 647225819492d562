"""Connecting to the API server: a kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``,
and a context of it), else the pod's ServiceAccount in a cluster; and the namespace
that goes with it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import kubernetes.config as k8s_config
import yaml
from kubernetes import client as k8s
from urllib3.util.retry import Retry

from .errors import SDKConnectionError

DEFAULT_REQUEST_TIMEOUT = 30.0
"""The seconds a request may take (to connect, and for the answer) unless the client or
the call says otherwise."""

_HOME_KUBECONFIG = "~/.kube/config"
# What loading a kubeconfig raises for a file that is missing, not YAML, or not shaped
# as a kubeconfig.
_UNUSABLE = (
    k8s_config.ConfigException,
    OSError,
    yaml.YAMLError,
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
)
_SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _kubeconfig_namespace(config_file: str | None, context: str | None) -> str:
    contexts, active = k8s_config.list_kube_config_contexts(config_file=config_file)
    chosen: dict[str, Any] = active
    if context:
        chosen = next((c for c in contexts if c.get("name") == context), active)
    return str((chosen.get("context") or {}).get("namespace") or "default")


def connect(kubeconfig: str | Path | None, context: str | None) -> tuple[Any, str]:
    """An ``ApiClient`` and the default namespace. A kubeconfig that was named (argument,
    context, or an existing file ``$KUBECONFIG`` names when this is called) must load;
    without one, the in-cluster config is tried."""
    configuration = k8s.Configuration()
    # $KUBECONFIG as it is now: the kubernetes client reads it once, at its import, as
    # its default file. As its load_config: one that names no file is as if unset (in a
    # pod, the in-cluster config is tried); one that names a file must load.
    from_env = os.environ.get("KUBECONFIG") or ""
    listed = any(Path(p).exists() for p in from_env.split(os.pathsep) if p)
    named = str(kubeconfig) if kubeconfig is not None else (from_env if listed else None)
    config_file = str(kubeconfig) if kubeconfig is not None else from_env or _HOME_KUBECONFIG
    try:
        k8s_config.load_kube_config(
            config_file=config_file, context=context, client_configuration=configuration
        )
        namespace = _kubeconfig_namespace(config_file, context)
    except _UNUSABLE as kube_error:
        if named is not None or context is not None:
            where = named or "~/.kube/config"
            raise SDKConnectionError(f"cannot load kubeconfig {where}: {kube_error}") from None
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except k8s_config.ConfigException as cluster_error:
            raise SDKConnectionError(
                f"no usable kubeconfig ({kube_error}) and not in a cluster ({cluster_error})"
            ) from None
        namespace = _SA_NAMESPACE.read_text().strip() if _SA_NAMESPACE.exists() else "default"
    # A request that timed out is not sent again: the request timeout bounds the call.
    configuration.retries = Retry(total=3, read=0)
    return k8s.ApiClient(configuration), namespace
