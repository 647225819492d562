"""Informers against a real kube-apiserver: convergence, relist, restarts."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from structlog.testing import capture_logs

from devcluster.polling import eventually
from mpi_operator.client import kubeapi
from mpi_operator.client.clock import RealClock
from mpi_operator.client.informer import SharedInformer
from mpi_operator.client.informer_factory import SharedInformerFactory
from mpi_operator.client.kubeapi import (
    CONFIGMAPS,
    KubeClient,
    Resource,
    is_already_exists,
    is_not_found,
)
from mpi_operator.client.reflector import Backoff
from mpi_operator.client.store import DeletedFinalStateUnknown
from mpi_operator.server.http import InformersCheck, healthz_app

pytestmark = pytest.mark.cluster


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": data,
    }


class Model:
    """What a handler believes exists, rebuilt purely from notifications."""

    def __init__(self) -> None:
        self.objects: dict[str, str] = {}
        self.tombstones: list[str] = []

    def on_add(self, obj: dict[str, Any]) -> None:
        self.objects[obj["metadata"]["name"]] = obj["metadata"]["resourceVersion"]

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.on_add(new)

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.tombstones.append(obj.key)
            obj = obj.obj
        self.objects.pop(obj["metadata"]["name"], None)


def new_informer(kube: KubeClient, ns: str, **kw: Any) -> tuple[SharedInformer, Model]:
    inf = SharedInformer(
        kube,
        CONFIGMAPS,
        namespace=ns,
        backoff=Backoff(RealClock(), initial=0.1, maximum=1.0),
        **kw,
    )
    model = Model()
    inf.add_event_handler(on_add=model.on_add, on_update=model.on_update, on_delete=model.on_delete)
    return inf, model


async def server_state(kube: KubeClient, ns: str, selector: str | None = None) -> dict[str, str]:
    items = (await kube.list(CONFIGMAPS, ns, label_selector=selector))["items"]
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in items}


def cache_state(inf: SharedInformer) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in inf.indexer.list()}


async def converged(kube: KubeClient, ns: str, inf: SharedInformer, model: Model) -> bool:
    truth = await server_state(kube, ns, inf.label_selector)
    return cache_state(inf) == truth and model.objects == truth


async def test_informer_converges_after_a_create_update_delete_storm(
    kube: KubeClient, ns: str
) -> None:
    for i in range(25):
        await kube.create(CONFIGMAPS, ns, configmap(f"pre-{i}", v="0"))
    inf, model = new_informer(kube, ns, page_size=7)
    inf.start()
    try:
        assert await inf.wait_for_sync(10)
        assert len(inf.indexer) == 25
        assert all("managedFields" not in o["metadata"] for o in inf.indexer.list())

        rng = random.Random(4)
        names = [f"pre-{i}" for i in range(25)] + [f"new-{i}" for i in range(15)]
        sem = asyncio.Semaphore(16)

        async def op(n: int) -> None:
            name = rng.choice(names)
            kind = rng.choice(["create", "update", "update", "delete"])
            async with sem:
                try:
                    if kind == "create":
                        await kube.create(CONFIGMAPS, ns, configmap(name, v=str(n)))
                    elif kind == "update":
                        await kube.patch(CONFIGMAPS, ns, name, {"data": {"v": str(n)}})
                    else:
                        await kube.delete(CONFIGMAPS, ns, name)
                except Exception as err:
                    if not (is_not_found(err) or is_already_exists(err)):
                        raise

        await asyncio.gather(*(op(n) for n in range(300)))
        await eventually(lambda: converged(kube, ns, inf, model), what="cache == server")
    finally:
        await inf.stop()


async def test_relist_after_410_emits_tombstones_for_objects_deleted_meanwhile(
    api_cluster: Any, kube: KubeClient, ns: str
) -> None:
    for i in range(8):
        await kube.create(CONFIGMAPS, ns, configmap(f"cm-{i}"))
    inf, model = new_informer(kube, ns)
    inf.start()
    assert await inf.wait_for_sync(10)
    await inf.stop()  # the cache stays; the watch is gone
    assert inf.reflector.relists == 1

    for i in range(3):
        await kube.delete(CONFIGMAPS, ns, f"cm-{i}")
    await kube.patch(CONFIGMAPS, ns, "cm-5", {"data": {"changed": "yes"}})
    await kube.create(CONFIGMAPS, ns, configmap("late"))
    # Compact etcd past our resourceVersion and drop the API server's watch
    # cache with it, so resuming the watch can only answer 410 Gone.
    await asyncio.to_thread(api_cluster.compact_etcd)
    # Not in a worker thread: the API server dies with the thread that started it
    # (PR_SET_PDEATHSIG), so it must be started from the main thread.
    api_cluster.restart_apiserver()

    inf.start()
    try:
        await eventually(lambda: converged(kube, ns, inf, model), what="cache == server")
        assert inf.reflector.relists == 2, "resuming from a compacted version must relist"
        assert sorted(model.tombstones) == [f"{ns}/cm-0", f"{ns}/cm-1", f"{ns}/cm-2"]
        assert inf.lister.get(ns, "cm-5")["data"] == {"changed": "yes"}  # type: ignore[index]
    finally:
        await inf.stop()


async def test_watch_survives_an_api_server_restart_without_losing_the_final_state(
    api_cluster: Any, kube: KubeClient, ns: str
) -> None:
    inf, model = new_informer(kube, ns)
    inf.start()
    try:
        assert await inf.wait_for_sync(10)
        for i in range(10):
            await kube.create(CONFIGMAPS, ns, configmap(f"cm-{i}", v="1"))
        await kube.patch(CONFIGMAPS, ns, "cm-0", {"data": {"v": "2"}})
        api_cluster.restart_apiserver()  # main thread: see PR_SET_PDEATHSIG note above
        # Changes right after the restart, while the reflector is reconnecting.
        await kube.patch(CONFIGMAPS, ns, "cm-1", {"data": {"v": "3"}})
        await kube.delete(CONFIGMAPS, ns, "cm-2")
        await kube.create(CONFIGMAPS, ns, configmap("after", v="4"))
        await eventually(lambda: converged(kube, ns, inf, model), what="cache == server")
        assert inf.lister.get(ns, "cm-1")["data"] == {"v": "3"}  # type: ignore[index]
        assert "cm-2" not in model.objects
    finally:
        await inf.stop()


async def test_label_and_field_selectors_limit_the_cache_and_relabelling_removes(
    kube: KubeClient, ns: str
) -> None:
    await kube.create(CONFIGMAPS, ns, configmap("in-a", {"app": "mpi"}))
    await kube.create(CONFIGMAPS, ns, configmap("in-b", {"app": "mpi"}))
    await kube.create(CONFIGMAPS, ns, configmap("skip", {"app": "mpi"}))
    await kube.create(CONFIGMAPS, ns, configmap("other", {"app": "web"}))
    inf, model = new_informer(
        kube, ns, label_selector="app=mpi", field_selector="metadata.name!=skip"
    )
    inf.start()
    try:
        assert await inf.wait_for_sync(10)
        assert sorted(inf.indexer.list_keys()) == [f"{ns}/in-a", f"{ns}/in-b"]
        await kube.patch(CONFIGMAPS, ns, "in-b", {"metadata": {"labels": {"app": "web"}}})
        await kube.patch(CONFIGMAPS, ns, "other", {"metadata": {"labels": {"app": "mpi"}}})
        await eventually(
            lambda: sorted(inf.indexer.list_keys()) == [f"{ns}/in-a", f"{ns}/other"],
            what="relabelled objects to move in and out of the cache",
        )
        assert "in-b" not in model.objects
    finally:
        await inf.stop()


CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)
WIDGETS = Resource("client-test.mpi-operator.io", "v1", "widgets", "Widget")


async def ensure_widget_crd(kube: KubeClient) -> None:
    body = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.client-test.mpi-operator.io"},
        "spec": {
            "group": "client-test.mpi-operator.io",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    try:
        await kube.create(CRDS, None, body)
    except Exception as err:
        if not is_already_exists(err):
            raise

    async def established() -> bool:
        crd = await kube.get(CRDS, None, "widgets.client-test.mpi-operator.io")
        conds = (crd.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conds)

    await eventually(established, what="widget CRD established")


async def test_factory_shares_informers_and_watches_custom_resources_in_all_namespaces(
    kube: KubeClient, ns: str
) -> None:
    await ensure_widget_crd(kube)
    factory = SharedInformerFactory(kube)
    selector = f"test-ns={ns}"
    inf = factory.informer_for(WIDGETS, label_selector=selector)
    assert factory.informer_for(WIDGETS, label_selector=selector) is inf
    assert factory.informer_for(WIDGETS) is not inf
    seen: list[str] = []
    inf.add_event_handler(on_add=lambda o: seen.append(o["metadata"]["name"]))

    async def create_widget(name: str) -> None:
        body = {
            "apiVersion": "client-test.mpi-operator.io/v1",
            "kind": "Widget",
            "metadata": {"name": name, "labels": {"test-ns": ns}},
            "spec": {"size": 3},
        }
        await kube.create(WIDGETS, ns, body)

    await create_widget("w0")
    factory.start()
    try:
        assert await factory.wait_for_cache_sync(15)
        await create_widget("w1")
        await eventually(lambda: sorted(seen) == ["w0", "w1"], what="widgets seen")
        w1 = inf.lister.get(ns, "w1")
        assert w1 is not None and w1["kind"] == "Widget" and w1["spec"] == {"size": 3}
        assert inf.namespaces == (None,), "factory default is all namespaces"
    finally:
        await factory.shutdown()


async def test_an_informer_that_dies_is_logged_once_reported_and_fails_healthz(
    kube: KubeClient, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in the watch path (here: the decoder raising on one object) used to end
    the informer's task unseen, its cache frozen and /healthz green."""
    decode = kubeapi._decode_line

    def poisoned(line: bytes) -> Any:
        if b"informer-poison" in line:
            raise RuntimeError("injected fault in the watch decoder")
        return decode(line)

    monkeypatch.setattr(kubeapi, "_decode_line", poisoned)
    with capture_logs() as logs:
        factory = SharedInformerFactory(kube, namespace=ns)
        factory.informer_for(CONFIGMAPS)
        healthy = factory.informer_for(CONFIGMAPS, label_selector="app=other")
        factory.start()
        assert await factory.wait_for_cache_sync(30)
        client: TestClient[web.Request, web.Application] = TestClient(
            TestServer(healthz_app([InformersCheck(factory.failures)]))
        )
        await client.start_server()
        try:
            assert (await client.get("/healthz")).status == 200
            await kube.create(CONFIGMAPS, ns, configmap("informer-poison"))
            died = await asyncio.wait_for(factory.wait_for_failure(), 30)
            resp = await client.get("/healthz?verbose")
            body = await resp.text()
        finally:
            await client.close()
            await factory.shutdown()
    assert died == "configmaps.v1.core: RuntimeError: injected fault in the watch decoder", died
    assert (resp.status, "[-]informers failed" in body) == (500, True), body
    assert healthy.failure is None  # stopped by shutdown(): not a death
    deaths = [r for r in logs if str(r["event"]).startswith("informer died")]
    assert len(deaths) == 1, logs
    assert deaths[0]["log_level"] == "error" and deaths[0]["exc_info"] is not None


async def test_stopping_informers_is_not_a_death(kube: KubeClient, ns: str) -> None:
    factory = SharedInformerFactory(kube, namespace=ns)
    factory.informer_for(CONFIGMAPS)
    factory.start()
    assert await factory.wait_for_cache_sync(30)
    await factory.shutdown()
    assert factory.failures() == []
