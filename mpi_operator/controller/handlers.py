"""Informer event handlers: every change becomes the key of the MPIJob it concerns.

Both MPIJob kinds use them, each with its own owner kind. A child enqueues the MPIJob
that controls it. The Kubeflow launcher pod is controlled by the launcher Job, so with
``batch_jobs`` it resolves through that Job. Updates that carry an unchanged
resourceVersion (resyncs) are ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mpi_operator.client import DeletedFinalStateUnknown, Lister, controller_of

Obj = dict[str, Any]


def _meta(obj: Obj) -> dict[str, Any]:
    meta: dict[str, Any] = obj.get("metadata") or {}
    return meta


def key_of(obj: Obj) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _changed(old: Obj, new: Obj) -> bool:
    return _meta(old).get("resourceVersion") != _meta(new).get("resourceVersion")


class JobHandlers:
    """Add and update of an MPIJob enqueue its key; its deletion is passed to ``deleted``."""

    def __init__(
        self, enqueue: Callable[[str], None], deleted: Callable[[str], None] | None = None
    ) -> None:
        self._enqueue = enqueue
        self._deleted = deleted

    def on_add(self, obj: Obj) -> None:
        self._enqueue(key_of(obj))

    def on_update(self, old: Obj, new: Obj) -> None:
        if _changed(old, new):
            self._enqueue(key_of(new))

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        if self._deleted is not None:
            self._deleted(key_of(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj))


class ChildHandlers:
    """Turns add/update/delete of children into the keys of the existing MPIJobs
    (``api_version``, ``kind``) that control them."""

    def __init__(
        self,
        api_version: str,
        kind: str,
        mpijobs: Lister,
        enqueue: Callable[[str], None],
        batch_jobs: Lister | None = None,
    ) -> None:
        self._owner = (api_version, kind)
        self._mpijobs = mpijobs
        self._enqueue = enqueue
        self._batch_jobs = batch_jobs

    def on_add(self, obj: Obj) -> None:
        self._handle(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if _changed(old, new):
            self._handle(new)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        self._handle(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)

    def _handle(self, obj: Obj) -> None:
        namespace = str(_meta(obj).get("namespace") or "")
        owner = controller_of(obj)
        if (
            owner is not None
            and self._batch_jobs is not None
            and owner.get("kind") == "Job"
            and str(owner.get("apiVersion", "")).startswith("batch/")
        ):
            job = self._batch_jobs.get(namespace, str(owner.get("name", "")))
            owner = controller_of(job) if job is not None else None
        if owner is None or (owner.get("apiVersion"), owner.get("kind")) != self._owner:
            return
        name = str(owner.get("name", ""))
        if self._mpijobs.get(namespace, name) is None:
            return  # an orphan of a deleted MPIJob
        self._enqueue(f"{namespace}/{name}")
