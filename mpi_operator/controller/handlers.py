"""Informer event handlers: every change becomes the key of the MPIJob it concerns.

Both MPIJob kinds use them, each with its own owner kind. A child enqueues the MPIJob
that controls it, as the kind looks it up (``owner_of``): a child's controller
reference by default; the Kubeflow launcher pod is controlled by the launcher Job, so
the Kubeflow kind resolves it through that Job (its ``ThroughLauncherJob``). Updates
that carry an unchanged resourceVersion (resyncs) are ignored. :class:`PodObserver`
tells the creation expectations which pods the informer saw come and go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.client import DeletedFinalStateUnknown, Lister, controller_of
from mpi_operator.controller.core.expectations import CreationExpectations


def _meta(obj: Obj) -> dict[str, Any]:
    meta: dict[str, Any] = metadata_of(obj)
    return meta


def key_of(obj: Obj) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _changed(old: Obj, new: Obj) -> bool:
    return _meta(old).get("resourceVersion") != _meta(new).get("resourceVersion")


def _unwrap(obj: Obj | DeletedFinalStateUnknown) -> Obj:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


class JobHandlers:
    """Add and update of an MPIJob enqueue its key; its deletion calls ``on_deleted``."""

    def __init__(
        self, enqueue: Callable[[str], None], on_deleted: Callable[[str], None] | None = None
    ) -> None:
        self._enqueue = enqueue
        self._on_deleted = on_deleted

    def on_add(self, obj: Obj) -> None:
        self._enqueue(key_of(obj))

    def on_update(self, old: Obj, new: Obj) -> None:
        if _changed(old, new):
            self._enqueue(key_of(new))

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        if self._on_deleted is not None:
            self._on_deleted(key_of(_unwrap(obj)))


class PodObserver:
    """Pod add and delete events lower the creation expectations of the MPIJob
    (``api_version``, ``kind``) controlling the pod, as client-go's Job controller
    calls CreationObserved in addPod and DeletionObserved in deletePod: a pod created
    and deleted between two syncs is then created again by the next one."""

    def __init__(self, api_version: str, kind: str, expectations: CreationExpectations) -> None:
        self._owner = (api_version, kind)
        self._expectations = expectations

    def on_add(self, obj: Obj) -> None:
        self._observe(obj)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        self._observe(_unwrap(obj))

    def _observe(self, pod: Obj) -> None:
        owner = controller_of(pod)
        if owner is None or (owner.get("apiVersion"), owner.get("kind")) != self._owner:
            return
        meta = _meta(pod)
        key = f"{meta.get('namespace', '')}/{owner.get('name', '')}"
        self._expectations.observed(key, str(meta.get("name", "")))


#: The owner reference of the MPIJob that controls a child, as a kind looks it up
#: (None: no controller, or one the kind cannot see).
OwnerLookup = Callable[[Obj], Mapping[str, Any] | None]


class ChildHandlers:
    """Turns add/update/delete of children into the keys of the existing MPIJobs
    (``api_version``, ``kind``) that control them."""

    def __init__(
        self,
        api_version: str,
        kind: str,
        mpijobs: Lister,
        enqueue: Callable[[str], None],
        owner_of: OwnerLookup = controller_of,
        urgent: Urgent | None = None,
    ) -> None:
        """``enqueue`` takes the key of a child's change; ``owner_of`` is the kind's
        lookup of the controller reference it follows; with ``urgent``, a change of
        a child of a cached MPIJob its predicate holds for goes to its ``enqueue``
        instead (a step that waits on the child, to be taken at once)."""
        self.owner = (api_version, kind)
        self._mpijobs = mpijobs
        self._enqueue = enqueue
        self._owner_of = owner_of
        self._urgent = urgent

    def on_add(self, obj: Obj) -> None:
        self._handle(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if _changed(old, new):
            self._handle(new)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        self._handle(_unwrap(obj))

    def _handle(self, obj: Obj) -> None:
        namespace = str(_meta(obj).get("namespace") or "")
        owner = self._owner_of(obj)
        if owner is None or (owner.get("apiVersion"), owner.get("kind")) != self.owner:
            return
        name = str(owner.get("name", ""))
        mpijob = self._mpijobs.get(namespace, name)
        if mpijob is None:
            return  # an orphan of a deleted MPIJob
        if self._urgent is not None and self._urgent.applies(mpijob):
            self._urgent.enqueue(f"{namespace}/{name}")
            return
        self._enqueue(f"{namespace}/{name}")


@dataclass(frozen=True, slots=True)
class Urgent:
    """Children's changes that are synced at once rather than batched: those of the
    MPIJobs ``applies`` holds for (their next step waits on a few children), put in the
    queue by ``enqueue``."""

    applies: Callable[[Obj], bool]
    enqueue: Callable[[str], None]
