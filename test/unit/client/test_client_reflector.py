"""Reflector and informer logic against a scripted list/watch client.

This is not an API server: it replays canned list pages and watch streams so
that the relist / tombstone / skip logic can be checked deterministically.
The same behaviour is exercised against a real kube-apiserver in
test/integration/client.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any, cast

import aiohttp
import pytest

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.informer import SharedInformer
from mpi_operator.client.kubeapi import CONFIGMAPS, ApiError, KubeClient
from mpi_operator.client.store import DeletedFinalStateUnknown
from mpi_operator.client.watch_pacing import WATCH_BATCH_WINDOW

Step = list[dict[str, Any] | bytes] | BaseException


def cm(name: str, rv: str, **data: str) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "ns",
            "name": name,
            "resourceVersion": rv,
            "managedFields": [{"manager": "kubectl"}],
        },
        "data": data,
    }


class ScriptedClient:
    def __init__(self) -> None:
        self.lists: list[list[dict[str, Any]]] = []  # pages per list call
        self.list_rvs: list[str] = []
        self.watches: list[Step] = []
        self.watch_rvs: list[str | None] = []
        self.batch_windows: list[float] = []
        self.list_calls = 0

    async def list(self, resource: Any, namespace: Any, **kw: Any) -> dict[str, Any]:
        call = self.list_calls
        pages = self.lists[min(call, len(self.lists) - 1)]
        cont = kw.get("continue_")
        index = int(cont) if cont else 0
        items = pages[index]["items"]
        meta: dict[str, Any] = {"resourceVersion": self.list_rvs[min(call, len(self.list_rvs) - 1)]}
        if index + 1 < len(pages):
            meta["continue"] = str(index + 1)
        else:
            self.list_calls += 1
        return {"kind": "ConfigMapList", "metadata": meta, "items": items}

    async def watch(
        self, resource: Any, namespace: Any, **kw: Any
    ) -> AsyncGenerator[dict[str, Any] | bytes, None]:
        self.watch_rvs.append(kw.get("resource_version"))
        self.batch_windows.append(kw["batch_window"])
        step: Step = self.watches.pop(0) if self.watches else []
        if isinstance(step, BaseException):
            raise step
        for ev in step:
            yield ev
        if not self.watches:
            # Park like a quiet watch so the test decides what happens next.
            await asyncio.Event().wait()


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def add(self, obj: dict[str, Any]) -> None:
        self.events.append(("add", obj["metadata"]["name"]))

    def update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.events.append(
            (
                "update",
                new["metadata"]["name"],
                old["metadata"]["resourceVersion"],
                new["metadata"]["resourceVersion"],
            )
        )

    def delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.events.append(("tombstone", obj.key))
        else:
            self.events.append(("delete", obj["metadata"]["name"]))


async def run_until(clock: FakeClock, cond: Callable[[], bool], steps: int = 200) -> None:
    for _ in range(steps):
        await clock.settle(20)
        if cond():
            return
        clock.step(1)
    raise AssertionError("condition not reached")


def informer(client: ScriptedClient, clock: FakeClock) -> tuple[SharedInformer, Recorder]:
    inf = SharedInformer(
        cast(KubeClient, client), CONFIGMAPS, namespace="ns", clock=clock, page_size=2
    )
    rec = Recorder()
    inf.add_event_handler(on_add=rec.add, on_update=rec.update, on_delete=rec.delete)
    return inf, rec


async def test_paged_list_fills_cache_strips_managed_fields_and_marks_synced() -> None:
    client = ScriptedClient()
    client.lists = [[{"items": [cm("a", "1"), cm("b", "2")]}, {"items": [cm("c", "3")]}]]
    client.list_rvs = ["10"]
    clock = FakeClock()
    inf, rec = informer(client, clock)
    inf.start()
    await run_until(clock, inf.has_synced)
    assert sorted(inf.indexer.list_keys()) == ["ns/a", "ns/b", "ns/c"]
    assert all("managedFields" not in o["metadata"] for o in inf.indexer.list())
    assert inf.lister.get("ns", "a")["kind"] == "ConfigMap"  # type: ignore[index]
    assert rec.events == [("add", "a"), ("add", "b"), ("add", "c")]
    assert client.watch_rvs == ["10"]
    # An informer's watch reads a busy stream in batches.
    assert client.batch_windows == [WATCH_BATCH_WINDOW]
    await inf.stop()


async def test_watch_events_apply_in_order_and_bad_lines_are_skipped() -> None:
    client = ScriptedClient()
    client.lists = [[{"items": [cm("a", "1")]}]]
    client.list_rvs = ["5"]
    client.watches = [
        [
            {"type": "ADDED", "object": cm("b", "6")},
            b"{not json",
            {"type": "MODIFIED", "object": {"metadata": {"resourceVersion": "7"}}},
            {"type": "MODIFIED", "object": cm("a", "8", k="v")},
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}},
            {"type": "DELETED", "object": cm("b", "10")},
            {"type": "DELETED", "object": cm("never-seen", "11")},
        ]
    ]
    clock = FakeClock()
    inf, rec = informer(client, clock)
    inf.start()
    await run_until(clock, lambda: inf.last_sync_resource_version == "11")
    assert rec.events == [
        ("add", "a"),
        ("add", "b"),
        ("update", "a", "1", "8"),
        ("delete", "b"),
    ]
    assert inf.indexer.list_keys() == ["ns/a"]
    assert inf.lister.get("ns", "a")["data"] == {"k": "v"}  # type: ignore[index]
    await inf.stop()


async def test_expired_watch_relists_and_tombstones_objects_that_vanished() -> None:
    client = ScriptedClient()
    client.lists = [
        [{"items": [cm("a", "1"), cm("b", "2")]}],
        [{"items": [cm("a", "1"), cm("c", "20")]}],
    ]
    client.list_rvs = ["5", "30"]
    client.watches = [
        [
            {
                "type": "ERROR",
                "object": {
                    "kind": "Status",
                    "code": 410,
                    "reason": "Expired",
                    "message": "too old resource version: 5 (25)",
                },
            }
        ],
    ]
    clock = FakeClock()
    inf, rec = informer(client, clock)
    inf.start()
    await run_until(clock, lambda: client.list_calls == 2)
    assert rec.events[2:] == [
        ("update", "a", "1", "1"),
        ("add", "c"),
        ("tombstone", "ns/b"),
    ]
    assert sorted(inf.indexer.list_keys()) == ["ns/a", "ns/c"]
    assert client.watch_rvs == ["5", "30"]
    await inf.stop()


async def test_gone_on_watch_start_also_relists() -> None:
    client = ScriptedClient()
    client.lists = [[{"items": [cm("a", "1")]}], [{"items": []}]]
    client.list_rvs = ["5", "9"]
    client.watches = [ApiError(410, {"reason": "Expired", "message": "too old"})]
    clock = FakeClock()
    inf, rec = informer(client, clock)
    inf.start()
    await run_until(clock, lambda: ("tombstone", "ns/a") in rec.events)
    assert inf.indexer.list_keys() == []
    await inf.stop()


async def test_network_errors_rewatch_from_the_last_seen_version_without_relisting() -> None:
    client = ScriptedClient()
    client.lists = [[{"items": []}]]
    client.list_rvs = ["5"]
    client.watches = [
        [{"type": "ADDED", "object": cm("a", "6")}],
        aiohttp.ClientConnectionError("connection reset"),
        [{"type": "ADDED", "object": cm("b", "7")}],
    ]
    # First stream ends cleanly after one event (a server-side timeout).
    clock = FakeClock()
    inf, _ = informer(client, clock)
    inf.start()
    await run_until(clock, lambda: "ns/b" in inf.indexer)
    assert client.watch_rvs == ["5", "6", "6"]
    assert client.list_calls == 1
    await inf.stop()


@pytest.mark.parametrize(
    ("refusal", "relists"),
    [
        (ApiError(429, {"reason": "TooManyRequests", "message": "throttled"}), 1),
        (ApiError(500, {"reason": "InternalError", "message": "etcd hiccup"}), 1),
        (ApiError(503, {"reason": "ServiceUnavailable", "message": "busy"}), 1),
        (ApiError(403, {"reason": "Forbidden", "message": "denied"}), 2),
    ],
)
async def test_a_refused_watch_start_rewatches_unless_the_error_is_final(
    refusal: ApiError, relists: int
) -> None:
    """client-go: 429 (and internal errors) back off and watch again from the last
    resourceVersion; anything else starts over with a list."""
    client = ScriptedClient()
    client.lists = [[{"items": [cm("a", "5")]}]]
    client.list_rvs = ["5"]
    client.watches = [refusal, [{"type": "ADDED", "object": cm("b", "6")}]]
    clock = FakeClock()
    inf, _ = informer(client, clock)
    inf.start()
    await run_until(clock, lambda: "ns/b" in inf.indexer)
    assert client.list_calls == relists
    assert client.watch_rvs == ["5", "5"]
    await inf.stop()


async def test_handler_added_late_is_replayed_the_cache_and_failing_handlers_are_isolated() -> None:
    client = ScriptedClient()
    client.lists = [[{"items": [cm("a", "1")]}]]
    client.list_rvs = ["5"]
    client.watches = [[{"type": "ADDED", "object": cm("b", "6")}]]
    clock = FakeClock()
    inf, rec = informer(client, clock)

    def boom(obj: dict[str, Any]) -> None:
        raise RuntimeError("handler bug")

    inf.add_event_handler(on_add=boom)
    inf.start()
    await run_until(clock, lambda: "ns/b" in inf.indexer)
    late = Recorder()
    inf.add_event_handler(on_add=late.add)
    assert sorted(late.events) == [("add", "a"), ("add", "b")]
    assert ("add", "b") in rec.events
    await inf.stop()


async def test_resync_replays_updates_with_unchanged_versions() -> None:
    client = ScriptedClient()
    client.lists = [[{"items": [cm("a", "1")]}]]
    client.list_rvs = ["5"]
    clock = FakeClock()
    inf = SharedInformer(
        cast(KubeClient, client), CONFIGMAPS, namespace="ns", clock=clock, resync_period=30
    )
    rec = Recorder()
    inf.add_event_handler(on_add=rec.add, on_update=rec.update)
    inf.start()
    await run_until(clock, lambda: ("update", "a", "1", "1") in rec.events)
    await inf.stop()
