"""The few parts of kubernetes_asyncio the operator uses, without the rest of it.

``import kubernetes_asyncio`` (or any of its submodules) first runs the package's
``__init__``, which imports ``client/__init__``: every API group and about 800 model
classes. That is about 3 s and 30 MiB of a 90 MiB process, for a program that only
needs ``Configuration`` and the kubeconfig, in-cluster and exec credential loaders.

Before anything else imports them, :func:`_defer` registers ``kubernetes_asyncio``,
``kubernetes_asyncio.client`` and ``kubernetes_asyncio.client.models`` in
``sys.modules`` as packages whose ``__init__`` has not run yet. Submodules then import
normally from the packages' real directories. The first time anyone reads a name that
the package's ``__init__`` would have defined (for example ``client.V1Pod``), PEP 562's
module ``__getattr__`` runs that ``__init__`` in place, and the name is there: nothing
is lost for code that wants the whole library, it only pays for it when it asks.

Importing this module is the only switch. If kubernetes_asyncio was already imported
in full (by a test, say), the real modules are kept and nothing changes.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

_DEFERRED = (
    "kubernetes_asyncio",
    "kubernetes_asyncio.client",
    "kubernetes_asyncio.client.models",
)


def _run_init(module: ModuleType) -> None:
    """Execute a deferred package's own ``__init__`` in its module object, once."""
    spec = module.__spec__
    if spec is None or spec.loader is None or module.__dict__.get("_lean_init_done"):
        return
    module.__dict__["_lean_init_done"] = True
    del module.__dict__["__getattr__"]
    spec.loader.exec_module(module)


def _deferred_getattr(module: ModuleType) -> Any:
    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        # A submodule (``from kubernetes_asyncio.client import rest``) loads alone.
        if importlib.util.find_spec(f"{module.__name__}.{name}") is not None:
            return importlib.import_module(f"{module.__name__}.{name}")
        _run_init(module)
        try:
            return module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None

    return __getattr__


def _defer(name: str) -> None:
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)
    module.__dict__["__getattr__"] = _deferred_getattr(module)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)


for _name in _DEFERRED:
    _defer(_name)

# Only submodules from here on: none of these runs a deferred package's __init__.
from kubernetes_asyncio.client.configuration import Configuration  # noqa: E402


class _ApiClientOnUse:
    """Makes the real ``ApiClient`` when called. Its module imports the REST client and
    ``multiprocessing.pool`` (about 1 MiB and 27 modules) that the operator never uses;
    the kubeconfig loader names the class only in ``new_client_from_config``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from kubernetes_asyncio.client.api_client import ApiClient

        return ApiClient(*args, **kwargs)


# The config loaders do ``from kubernetes_asyncio.client import ApiClient, Configuration``.
# ``Configuration`` is set for good; the stand-in only while the loader is imported, so
# that anyone asking the package for ``ApiClient`` later gets the real class.
_client = sys.modules["kubernetes_asyncio.client"]
_client.__dict__.setdefault("Configuration", Configuration)
_stand_in = "ApiClient" not in _client.__dict__
if _stand_in:
    _client.__dict__["ApiClient"] = _ApiClientOnUse
from kubernetes_asyncio.config import kube_config as _kube_config  # noqa: E402

if _stand_in:
    del _client.__dict__["ApiClient"]
from kubernetes_asyncio.config.dateutil import parse_rfc3339  # noqa: E402
from kubernetes_asyncio.config.exec_provider import ExecProvider  # noqa: E402
from kubernetes_asyncio.config.incluster_config import (  # noqa: E402
    SERVICE_CERT_FILENAME,
    SERVICE_TOKEN_FILENAME,
    InClusterConfigLoader,
)
from kubernetes_asyncio.config.kube_config import load_kube_config  # noqa: E402


def loader_temp_files() -> dict[str, str]:
    """The files the kubeconfig loader wrote its ``*-data`` to, by content (its private
    cache, which it reuses and deletes at exit; read anew each time, as it rebinds it)."""
    files: dict[str, str] = _kube_config._temp_files
    return files


__all__ = [
    "SERVICE_CERT_FILENAME",
    "SERVICE_TOKEN_FILENAME",
    "Configuration",
    "ExecProvider",
    "InClusterConfigLoader",
    "load_kube_config",
    "loader_temp_files",
    "parse_rfc3339",
]
