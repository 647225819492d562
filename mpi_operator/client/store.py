"""The informer cache: a keyed store with indexes, plus typed-free listers.

Objects are plain dicts (the JSON the API server sent, after the informer's
transform), keyed ``namespace/name`` (just ``name`` for cluster-scoped
objects), as client-go's MetaNamespaceKeyFunc. The :class:`Indexer` keeps
secondary indexes up to date on every mutation; two are always present:

* ``namespace`` - the object's namespace;
* ``controller-uid`` - the UID of the owner reference with ``controller: true``,
  which is how a controller finds the children it owns.

Callers must treat returned objects as read-only; they are shared with every
other reader of the cache (client-go has the same rule). Everything runs on
one event loop, so no locking is needed.

:class:`DeletedFinalStateUnknown` is the tombstone handed to delete handlers
when a relist shows an object vanished while we were not watching: the last
state we knew may be stale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.client.selectors import Selector, as_selector

IndexFunc = Callable[[Obj], list[str]]
ObjList = list[Obj]
KeyList = list[str]

NAMESPACE_INDEX = "namespace"
CONTROLLER_UID_INDEX = "controller-uid"


@dataclass(frozen=True)
class DeletedFinalStateUnknown:
    key: str
    obj: Obj


def meta_namespace_key(obj: Obj | DeletedFinalStateUnknown) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    meta = metadata_of(obj)
    name = meta.get("name")
    if not name:
        raise KeyError("object has no metadata.name")
    ns = meta.get("namespace")
    return f"{ns}/{name}" if ns else str(name)


def split_key(key: str) -> tuple[str, str]:
    """``"ns/name"`` -> ``("ns", "name")``; ``"name"`` -> ``("", "name")``."""
    parts = key.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format {key!r}")


def namespace_index(obj: Obj) -> list[str]:
    ns = metadata_of(obj).get("namespace")
    return [ns] if ns else [""]


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner reference marked ``controller: true``, if any."""
    for ref in metadata_of(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def is_controlled_by(obj: Mapping[str, Any], uid: str) -> bool:
    """Whether the owner with ``uid`` is ``obj``'s controller (metav1.IsControlledBy)."""
    owner = controller_of(obj)
    return owner is not None and owner.get("uid") == uid


def controller_uid_index(obj: Obj) -> list[str]:
    ref = controller_of(obj)
    return [str(ref["uid"])] if ref and ref.get("uid") else []


def default_indexers() -> dict[str, IndexFunc]:
    return {NAMESPACE_INDEX: namespace_index, CONTROLLER_UID_INDEX: controller_uid_index}


class Indexer:
    """Keyed object store with secondary indexes."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = dict(
            default_indexers() if indexers is None else indexers
        )
        self._indices: dict[str, dict[str, set[str]]] = {n: {} for n in self._indexers}

    # -- index maintenance -------------------------------------------------
    def _unindex(self, key: str, obj: Obj) -> None:
        for name, fn in self._indexers.items():
            index = self._indices[name]
            for value in fn(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]

    def _index(self, key: str, obj: Obj) -> None:
        for name, fn in self._indexers.items():
            index = self._indices[name]
            for value in fn(obj):
                index.setdefault(value, set()).add(key)

    def indexer_names(self) -> set[str]:
        return set(self._indexers)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        for name, fn in indexers.items():
            if name in self._indexers:
                raise ValueError(f"indexer {name!r} already exists")
            self._indexers[name] = fn
            index: dict[str, set[str]] = {}
            for key, obj in self._items.items():
                for value in fn(obj):
                    index.setdefault(value, set()).add(key)
            self._indices[name] = index

    # -- mutations ---------------------------------------------------------
    def add(self, obj: Obj) -> Obj | None:
        """Insert or replace ``obj``; returns the previous object, if any."""
        key = meta_namespace_key(obj)
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = obj
        self._index(key, obj)
        return old

    update = add

    def delete(self, obj: Obj | DeletedFinalStateUnknown) -> Obj | None:
        return self.delete_key(meta_namespace_key(obj))

    def delete_key(self, key: str) -> Obj | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def replace(self, objs: Iterable[Obj]) -> None:
        self._items = {}
        self._indices = {n: {} for n in self._indexers}
        for obj in objs:
            self.add(obj)

    # -- reads ---------------------------------------------------------------
    def get_by_key(self, key: str) -> Obj | None:
        return self._items.get(key)

    def get(self, obj: Obj) -> Obj | None:
        return self._items.get(meta_namespace_key(obj))

    def list(self) -> ObjList:
        return list(self._items.values())

    def list_keys(self) -> KeyList:
        return list(self._items.keys())

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def by_index(self, index_name: str, value: str) -> ObjList:
        index = self._indices.get(index_name)
        if index is None:
            raise KeyError(f"index {index_name!r} does not exist")
        return [self._items[k] for k in sorted(index.get(value, ()))]

    def index_keys(self, index_name: str, value: str) -> KeyList:
        return sorted(self.index_key_set(index_name, value))

    def index_key_set(self, index_name: str, value: str) -> frozenset[str]:
        """The keys of ``index_keys``, unsorted, for membership tests."""
        index = self._indices.get(index_name)
        if index is None:
            raise KeyError(f"index {index_name!r} does not exist")
        return frozenset(index.get(value, ()))

    def list_index_values(self, index_name: str) -> KeyList:
        return sorted(self._indices.get(index_name, {}))


class Lister:
    """Read access to an informer's cache, like a generated client-go lister."""

    def __init__(self, indexer: Indexer) -> None:
        self._indexer = indexer

    def list(
        self,
        selector: Selector | str | Mapping[str, str] | None = None,
        namespace: str | None = None,
    ) -> ObjList:
        """Objects matching ``selector`` in ``namespace`` (all namespaces if None)."""
        sel = as_selector(selector)
        if namespace is None:
            candidates = self._indexer.list()
        else:
            candidates = self._indexer.by_index(NAMESPACE_INDEX, namespace)
        if sel.empty():
            return candidates
        return [o for o in candidates if sel.matches_object(o)]

    def get(self, namespace: str, name: str) -> Obj | None:
        key = f"{namespace}/{name}" if namespace else name
        return self._indexer.get_by_key(key)

    def by_index(self, index_name: str, value: str) -> ObjList:
        return self._indexer.by_index(index_name, value)

    def keys_controlled_by(self, uid: str) -> frozenset[str]:
        """Keys of the cached objects whose controller is ``uid``."""
        return self._indexer.index_key_set(CONTROLLER_UID_INDEX, uid)

    def by_controller_uid(self, uid: str, namespace: str | None = None) -> ObjList:
        objs = self._indexer.by_index(CONTROLLER_UID_INDEX, uid)
        if namespace is None:
            return objs
        return [o for o in objs if metadata_of(o).get("namespace") == namespace]

    def namespaced(self, namespace: str) -> NamespaceLister:
        return NamespaceLister(self, namespace)


class NamespaceLister:
    def __init__(self, lister: Lister, namespace: str) -> None:
        self._lister = lister
        self.namespace = namespace

    def list(self, selector: Selector | str | Mapping[str, str] | None = None) -> ObjList:
        return self._lister.list(selector, self.namespace)

    def get(self, name: str) -> Obj | None:
        return self._lister.get(self.namespace, name)
