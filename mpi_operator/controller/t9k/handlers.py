"""Informer handlers: a change to a T9k MPIJob or one of its children enqueues the job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mpi_operator.api.t9k import API_VERSION, KIND
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
    def __init__(self, enqueue: Callable[[str], None]) -> None:
        self._enqueue = enqueue

    def on_add(self, obj: Obj) -> None:
        self._enqueue(key_of(obj))

    def on_update(self, old: Obj, new: Obj) -> None:
        if _changed(old, new):
            self._enqueue(key_of(new))


class ChildHandlers:
    """Children (the launcher too: it is a Pod) name their T9k MPIJob as controller."""

    def __init__(self, mpijobs: Lister, enqueue: Callable[[str], None]) -> None:
        self._mpijobs = mpijobs
        self._enqueue = enqueue

    def on_add(self, obj: Obj) -> None:
        self._handle(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if _changed(old, new):
            self._handle(new)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        self._handle(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)

    def _handle(self, obj: Obj) -> None:
        owner = controller_of(obj)
        if owner is None or owner.get("kind") != KIND or owner.get("apiVersion") != API_VERSION:
            return
        namespace = str(_meta(obj).get("namespace") or "")
        name = str(owner.get("name", ""))
        if self._mpijobs.get(namespace, name) is not None:
            self._enqueue(f"{namespace}/{name}")
