"""Informers skip the objects the decoder refuses, report each once, and say when they
cannot list (what ``/healthz`` reads). Driven by the scripted list/watch client of
test_client_reflector; the real decoding is in test_client_decoding, the real API server
in test/integration/server/test_server_undecodable.py."""

from __future__ import annotations

from typing import Any, cast

from prometheus_client import CollectorRegistry
from test_client_decoding import deep_job
from test_client_reflector import ScriptedClient, cm, informer, run_until

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.decoding import Undecodable
from mpi_operator.client.events import WARNING, EventRecorder
from mpi_operator.client.informer_factory import SharedInformerFactory
from mpi_operator.client.kubeapi import CONFIGMAPS, ApiError, KubeClient
from mpi_operator.client.undecodable import REASON, UndecodableReporter

METRIC = "mpi_operator_undecodable_objects_total"


class Events:
    """Stands for the recorder: what would be written."""

    def __init__(self) -> None:
        self.recorded: list[tuple[dict[str, Any], str, str, str]] = []

    def event(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        self.recorded.append((obj, event_type, reason, message))


def reporter() -> tuple[UndecodableReporter, Events, CollectorRegistry]:
    events, registry = Events(), CollectorRegistry()
    return UndecodableReporter(cast(EventRecorder, events), registry), events, registry


def refused(name: str, rv: str, event_type: str | None = None) -> Undecodable:
    return Undecodable(
        reason="depth limit exceeded",
        namespace="ns",
        name=name,
        uid=f"uid-{name}",
        resource_version=rv,
        event_type=event_type,
    )


def counted(registry: CollectorRegistry) -> float | None:
    return registry.get_sample_value(METRIC, {"resource": str(CONFIGMAPS)})


async def test_a_listed_undecodable_object_is_skipped_the_rest_served_and_reported_once() -> None:
    client = ScriptedClient()
    # Relisted twice (the watch expires): the same version is reported once.
    pages = [[{"items": [cm("a", "1"), refused("bad", "2")]}, {"items": [cm("c", "3")]}]]
    client.lists = pages * 2
    client.list_rvs = ["10", "20"]
    gone = {"type": "ERROR", "object": {"code": 410, "reason": "Expired", "message": "old"}}
    client.watches = [[gone]]
    clock = FakeClock()
    inf, rec = informer(client, clock)
    report, events, registry = reporter()
    inf.report_undecodable_to(report)
    inf.start()
    await run_until(clock, lambda: client.list_calls == 2)

    assert sorted(inf.indexer.list_keys()) == ["ns/a", "ns/c"]
    assert ("add", "bad") not in rec.events
    assert counted(registry) == 1
    ((involved, event_type, reason, message),) = events.recorded
    assert (event_type, reason) == (WARNING, REASON)
    assert involved["kind"] == "ConfigMap" and involved["metadata"]["name"] == "bad"
    assert involved["metadata"]["namespace"] == "ns" and involved["metadata"]["uid"] == "uid-bad"
    assert "ns/bad" in message and "depth limit exceeded" in message
    await inf.stop()


async def test_a_cached_object_that_becomes_undecodable_leaves_the_cache() -> None:
    client = ScriptedClient()
    client.lists = [[{"items": [cm("a", "1"), cm("b", "2")]}]]
    client.list_rvs = ["5"]
    modified = b'{"type":"MODIFIED","object":' + deep_job("a", "ns").replace(b'"7"', b'"6"') + b"}"
    client.watches = [
        [
            modified,
            {"type": "ADDED", "object": cm("c", "8")},
            b'{"type":"DELETED","object":' + deep_job("b", "ns").replace(b'"7"', b'"9"') + b"}",
        ]
    ]
    clock = FakeClock()
    inf, rec = informer(client, clock)
    report, events, registry = reporter()
    inf.report_undecodable_to(report)
    inf.start()
    await run_until(clock, lambda: inf.last_sync_resource_version == "9")

    # As a relist would: gone from the cache, its handlers told of a final state unknown.
    assert inf.indexer.list_keys() == ["ns/c"]
    assert ("tombstone", "ns/a") in rec.events and ("tombstone", "ns/b") in rec.events
    assert counted(registry) == 2
    # The deleted one gets no event; the modified one does, naming the object.
    assert [e[0]["metadata"]["name"] for e in events.recorded] == ["a"]
    assert events.recorded[0][0]["kind"] == "MPIJob"  # as the object says
    await inf.stop()


async def test_a_new_version_of_an_undecodable_object_is_reported_again() -> None:
    report, events, registry = reporter()
    for item in (refused("x", "1"), refused("x", "1", "MODIFIED"), refused("x", "2")):
        report(CONFIGMAPS, item)
    assert counted(registry) == 2  # the watch's sight of version 1 is the list's
    assert len(events.recorded) == 2


async def test_a_reflector_that_cannot_list_is_named_after_the_threshold_and_not_before() -> None:
    client = FailingLists(failures=100)
    clock = FakeClock()
    factory = SharedInformerFactory(cast(KubeClient, client), clock=clock, stalled_after=60)
    inf = factory.informer_for(CONFIGMAPS, namespace="ns")
    inf.start()
    await run_until(clock, lambda: client.calls >= 2)
    assert factory.health_failures() == []
    await run_until(clock, lambda: bool(factory.health_failures()), steps=400)
    (line,) = factory.health_failures()
    assert line.startswith("configmaps.v1.core in ns: not synced for 6")
    # A list that succeeds ends it.
    client.failures = 0
    await run_until(clock, inf.has_synced, steps=400)
    assert factory.health_failures() == []
    await inf.stop()


async def test_a_first_list_still_receiving_pages_is_not_stalled() -> None:
    client = SlowPages(pages=5, seconds_per_page=40)
    clock = client.clock = FakeClock()
    factory = SharedInformerFactory(cast(KubeClient, client), clock=clock, stalled_after=60)
    inf = factory.informer_for(CONFIGMAPS, namespace="ns")
    inf.start()
    seen: list[list[str]] = []

    def synced() -> bool:
        seen.append(factory.health_failures())
        return inf.has_synced()

    await run_until(clock, synced, steps=400)
    assert clock.monotonic() - 1000 >= 200  # five pages, 40 s each
    assert not any(seen)
    await inf.stop()


async def test_a_never_synced_reflector_with_a_hung_list_is_stalled() -> None:
    client = SlowPages(pages=1, seconds_per_page=1000)
    clock = client.clock = FakeClock()
    factory = SharedInformerFactory(cast(KubeClient, client), clock=clock, stalled_after=60)
    inf = factory.informer_for(CONFIGMAPS, namespace="ns")
    inf.start()
    await run_until(clock, lambda: bool(factory.health_failures()), steps=400)
    assert 60 < clock.monotonic() - 1000 <= 62
    await inf.stop()
    assert factory.health_failures() == []  # stopped: no longer reported


class FailingLists(ScriptedClient):
    """Lists fail with a 502 (as an undecodable page did) while ``failures`` lasts."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.calls = 0
        self.lists = [[{"items": [cm("a", "1")]}]]
        self.list_rvs = ["5"]

    async def list(self, resource: Any, namespace: Any, **kw: Any) -> dict[str, Any]:
        self.calls += 1
        if self.failures:
            self.failures -= 1
            raise ApiError(502, None, "the answer is not a JSON object")
        return await super().list(resource, namespace, **kw)


class SlowPages(ScriptedClient):
    """A paged list whose every page takes ``seconds_per_page`` (fake) seconds."""

    def __init__(self, pages: int, seconds_per_page: float) -> None:
        super().__init__()
        self.seconds_per_page = seconds_per_page
        self.lists = [[{"items": [cm(f"o{i}", str(i + 1))]} for i in range(pages)]]
        self.list_rvs = ["50"]
        self.clock: FakeClock | None = None

    async def list(self, resource: Any, namespace: Any, **kw: Any) -> dict[str, Any]:
        assert self.clock is not None
        await self.clock.sleep(self.seconds_per_page)
        return await super().list(resource, namespace, **kw)
