"""Object metadata and copying shared by the builders of both kinds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mpi_operator.api.object_model import Obj


def deep_copy(value: Any) -> Any:
    """Copies JSON-shaped data; several times faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [deep_copy(v) for v in value]
    return value


def own_dict(parent: Obj, key: str) -> Obj:
    """Gives ``parent`` its own shallow copy of the object at ``key`` (a new one when
    absent or not an object) and returns it.

    The pod builders' copy-on-write: a pod shares every part of its template that it
    does not change (containers' env entries, volumes, affinity...) with the cached
    job, and copies only the objects on the way to a change. That is safe because a
    built pod is only serialised and sent, never changed afterwards (the labels added
    on the way are new dicts), and the cache's jobs are never changed in place."""
    value = parent.get(key)
    copied: Obj = dict(value) if isinstance(value, dict) else {}
    parent[key] = copied
    return copied


def own_item(parent: Obj, key: str, index: int) -> Obj:
    """As :func:`own_dict`, for item ``index`` of the list at ``key`` (the list is
    copied too, its other items shared)."""
    items = list(parent[key])
    copied: Obj = dict(items[index])
    items[index] = copied
    parent[key] = items
    return copied


def controller_reference(api_version: str, kind: str, name: str, uid: str) -> Obj:
    """The owner reference that makes an object a child of its controller."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def object_meta(name: str, namespace: str, labels: Mapping[str, str], owner: Obj) -> Obj:
    """The metadata of a child: its name and labels, owned by ``owner`` (a reference)."""
    return {
        "name": name,
        "namespace": namespace,
        "labels": dict(labels),
        "ownerReferences": [owner],
    }
