"""An informer over a list of namespaces: one reflector per namespace feeding one
store; a namespace's relist replaces only that namespace's objects, the informer is
synced once every namespace has been listed, and the lister reads across them.
(Pure store logic: the reflectors are not run; the live informer is covered by
test/e2e/test_namespace_list.py.)"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from mpi_operator.client.informer import SharedInformer
from mpi_operator.client.informer_factory import SharedInformerFactory
from mpi_operator.client.kubeapi import CONFIGMAPS, PRIORITY_CLASSES, KubeClient
from mpi_operator.client.store import DeletedFinalStateUnknown


def cm(ns: str, name: str, rv: str = "1") -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "resourceVersion": rv}}


@pytest.mark.parametrize(
    ("namespace", "scopes"),
    [(None, [None]), ("", [None]), ("a", ["a"]), (("a", "b"), ["a", "b"])],
)
async def test_one_reflector_per_namespace(namespace: Any, scopes: list[str | None]) -> None:
    inf = SharedInformer(cast(KubeClient, None), CONFIGMAPS, namespace=namespace)
    assert [r.namespace for r in inf.reflectors] == scopes
    assert inf.reflector is inf.reflectors[0]


async def test_relist_of_one_namespace_leaves_the_others_and_sync_waits_for_all() -> None:
    inf = SharedInformer(cast(KubeClient, None), CONFIGMAPS, namespace=("a", "b"))
    deleted: list[str] = []
    inf.add_event_handler(
        on_delete=lambda o: deleted.append(o.key if isinstance(o, DeletedFinalStateUnknown) else "")
    )
    a, b = (sink for sink in inf._sinks)
    a.replace([cm("a", "x"), cm("a", "y")], "10")
    assert not inf.has_synced()
    b.replace([cm("b", "x")], "11")
    assert inf.has_synced()
    a.replace([cm("a", "x", "2")], "12")
    assert deleted == ["a/y"]
    assert sorted(
        o["metadata"]["namespace"] + "/" + o["metadata"]["name"] for o in inf.lister.list()
    ) == [
        "a/x",
        "b/x",
    ]
    assert inf.lister.get("b", "x") is not None and inf.lister.get("a", "y") is None
    assert [o["metadata"]["name"] for o in inf.lister.list(namespace="b")] == ["x"]
    b.on_watch_event("DELETED", cm("b", "x"))
    assert inf.lister.get("b", "x") is None and inf.lister.get("a", "x") is not None


async def test_factory_lists_cluster_scoped_resources_cluster_wide() -> None:
    factory = SharedInformerFactory(cast(KubeClient, None), namespace=("a", "b"))
    assert [r.namespace for r in factory.informer_for(CONFIGMAPS).reflectors] == ["a", "b"]
    assert [r.namespace for r in factory.informer_for(PRIORITY_CLASSES).reflectors] == [None]


async def test_an_on_demand_informer_is_left_to_its_owner_but_its_death_is_reported() -> None:
    factory = SharedInformerFactory(cast(KubeClient, None))
    inf = factory.on_demand(SharedInformer(cast(KubeClient, None), CONFIGMAPS))
    factory.start()
    assert await factory.wait_for_cache_sync(0.1)  # not waited for: nothing to sync
    assert inf._task is None  # not started by the factory

    async def broken() -> None:
        raise RuntimeError("injected fault")

    inf.run = broken  # type: ignore[method-assign]
    inf.start()
    died = await asyncio.wait_for(factory.wait_for_failure(), 5)
    assert died == "configmaps.v1.core: RuntimeError: injected fault"
    assert factory.failures() == [died]
