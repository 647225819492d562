"""Informer event handlers: every change becomes the key of the MPIJob it concerns.

A child enqueues the MPIJob that controls it; a launcher pod is controlled by
the launcher Job, so it resolves through that Job. Updates that carry an
unchanged resourceVersion (resyncs) are ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mpi_operator.api.v2beta1 import API_VERSION, KIND
from mpi_operator.client import DeletedFinalStateUnknown, Lister, controller_of

Obj = dict[str, Any]


def _meta(obj: Obj) -> dict[str, Any]:
    meta: dict[str, Any] = obj.get("metadata") or {}
    return meta


def key_of(obj: Obj) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class ChildHandlers:
    """Turns add/update/delete of children into MPIJob keys for ``enqueue``."""

    def __init__(self, mpijobs: Lister, jobs: Lister, enqueue: Callable[[str], None]) -> None:
        self._mpijobs = mpijobs
        self._jobs = jobs
        self._enqueue = enqueue

    def on_add(self, obj: Obj) -> None:
        self._handle(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if _meta(old).get("resourceVersion") == _meta(new).get("resourceVersion"):
            return
        self._handle(new)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        self._handle(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)

    def _handle(self, obj: Obj) -> None:
        namespace = str(_meta(obj).get("namespace") or "")
        owner = controller_of(obj)
        if owner is None:
            return
        if owner.get("kind") == "Job" and str(owner.get("apiVersion", "")).startswith("batch/"):
            job = self._jobs.get(namespace, str(owner.get("name", "")))
            owner = controller_of(job) if job is not None else None
            if owner is None:
                return
        if owner.get("kind") != KIND or owner.get("apiVersion") != API_VERSION:
            return
        name = str(owner.get("name", ""))
        if self._mpijobs.get(namespace, name) is None:
            return  # an orphan of a deleted MPIJob
        self._enqueue(f"{namespace}/{name}")


class MPIJobHandlers:
    def __init__(self, enqueue: Callable[[str], None]) -> None:
        self._enqueue = enqueue

    def on_add(self, obj: Obj) -> None:
        self._enqueue(key_of(obj))

    def on_update(self, old: Obj, new: Obj) -> None:
        if _meta(old).get("resourceVersion") == _meta(new).get("resourceVersion"):
            return
        self._enqueue(key_of(new))
