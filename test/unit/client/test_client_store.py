"""The indexer and listers behind every informer."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.client.store import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    Lister,
    meta_namespace_key,
    split_key,
)


def pod(
    ns: str, name: str, labels: dict[str, str] | None = None, owner: str | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": ns, "name": name, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [
            {"uid": "other", "controller": False},
            {"uid": owner, "controller": True},
        ]
    return {"metadata": meta}


def test_keys_are_namespace_slash_name_or_bare_name() -> None:
    assert meta_namespace_key(pod("ns", "a")) == "ns/a"
    assert meta_namespace_key({"metadata": {"name": "node1"}}) == "node1"
    assert meta_namespace_key(DeletedFinalStateUnknown("ns/x", {})) == "ns/x"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("node1") == ("", "node1")
    with pytest.raises(ValueError):
        split_key("a/b/c")


def test_indexes_follow_adds_updates_and_deletes() -> None:
    idx = Indexer()
    idx.add(pod("ns1", "a", owner="job-1"))
    idx.add(pod("ns1", "b", owner="job-1"))
    idx.add(pod("ns2", "c"))
    assert [o["metadata"]["name"] for o in idx.by_index(NAMESPACE_INDEX, "ns1")] == ["a", "b"]
    assert idx.index_keys(CONTROLLER_UID_INDEX, "job-1") == ["ns1/a", "ns1/b"]
    assert idx.index_keys(CONTROLLER_UID_INDEX, "other") == [], "only the controller counts"

    old = idx.update(pod("ns1", "a", owner="job-2"))
    assert old is not None
    assert idx.index_keys(CONTROLLER_UID_INDEX, "job-1") == ["ns1/b"]
    assert idx.index_keys(CONTROLLER_UID_INDEX, "job-2") == ["ns1/a"]

    assert idx.index_key_set(CONTROLLER_UID_INDEX, "job-2") == {"ns1/a"}
    assert Lister(idx).keys_controlled_by("job-1") == {"ns1/b"}

    idx.delete(pod("ns1", "b"))
    assert idx.index_keys(CONTROLLER_UID_INDEX, "job-1") == []
    assert Lister(idx).keys_controlled_by("job-1") == frozenset()
    assert "job-1" not in idx.list_index_values(CONTROLLER_UID_INDEX)
    assert len(idx) == 2


def test_replace_swaps_contents_and_rebuilds_indexes() -> None:
    idx = Indexer()
    idx.add(pod("ns1", "a"))
    idx.replace([pod("ns2", "z")])
    assert idx.list_keys() == ["ns2/z"]
    assert idx.by_index(NAMESPACE_INDEX, "ns1") == []


def test_custom_indexers_can_be_added_later_and_cover_existing_objects() -> None:
    idx = Indexer()
    idx.add(pod("ns", "a", labels={"role": "worker"}))
    idx.add_indexers({"role": lambda o: [o["metadata"]["labels"].get("role", "")]})
    assert idx.index_keys("role", "worker") == ["ns/a"]
    with pytest.raises(ValueError):
        idx.add_indexers({"role": lambda o: []})
    with pytest.raises(KeyError):
        idx.by_index("missing", "x")


def test_lister_filters_by_namespace_and_selector() -> None:
    idx = Indexer()
    idx.add(pod("ns1", "w0", {"role": "worker", "job": "pi"}))
    idx.add(pod("ns1", "l", {"role": "launcher", "job": "pi"}))
    idx.add(pod("ns2", "w0", {"role": "worker", "job": "pi"}))
    lister = Lister(idx)
    assert len(lister.list()) == 3
    assert len(lister.list("role=worker")) == 2
    assert len(lister.list({"role": "worker"}, namespace="ns1")) == 1
    assert len(lister.list("role in (worker,launcher),job=pi", namespace="ns1")) == 2
    assert lister.get("ns2", "w0") is not None
    assert lister.get("ns3", "w0") is None
    assert sorted(o["metadata"]["name"] for o in lister.namespaced("ns1").list("!missing")) == [
        "l",
        "w0",
    ]


def test_lister_finds_children_by_controller_uid() -> None:
    idx = Indexer()
    idx.add(pod("ns1", "a", owner="u1"))
    idx.add(pod("ns2", "b", owner="u1"))
    lister = Lister(idx)
    assert len(lister.by_controller_uid("u1")) == 2
    assert len(lister.by_controller_uid("u1", namespace="ns2")) == 1
