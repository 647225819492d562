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
