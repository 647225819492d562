"""Event recorder: correlation, patching, spam filtering and never blocking."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import aiohttp
from prometheus_client import CollectorRegistry

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.event_correlator import COMBINED_PREFIX
from mpi_operator.client.events import MAX_MESSAGE_LENGTH, NORMAL, WARNING, EventRecorder
from mpi_operator.client.kubeapi import ApiError

JOB = {
    "apiVersion": "kubeflow.org/v2beta1",
    "kind": "MPIJob",
    "metadata": {"namespace": "team", "name": "pi", "uid": "u-1", "resourceVersion": "7"},
}


class RecordingSink:
    """Stores Events in memory, answering like the API server would."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.stored: dict[str, dict[str, Any]] = {}
        self.network_failures = 0
        self.rv = 0

    async def create(self, event: dict[str, Any]) -> dict[str, Any]:
        if self.network_failures:
            self.network_failures -= 1
            raise aiohttp.ClientConnectionError("down")
        self.calls.append(("create", event))
        self.rv += 1
        stored = {**event, "metadata": {**event["metadata"], "resourceVersion": str(self.rv)}}
        self.stored[event["metadata"]["name"]] = stored
        return stored

    async def patch(self, event: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
        self.calls.append(("patch", dict(patch)))
        name = event["metadata"]["name"]
        if name not in self.stored:
            raise ApiError(404, {"reason": "NotFound", "message": "gone"})
        self.rv += 1
        stored = {**self.stored[name], **patch}
        stored["metadata"] = {**stored["metadata"], "resourceVersion": str(self.rv)}
        self.stored[name] = stored
        return stored


def recorder(
    sink: RecordingSink, clock: FakeClock | None = None, queue_size: int = 1000
) -> tuple[EventRecorder, FakeClock, CollectorRegistry]:
    clock = clock or FakeClock()
    reg = CollectorRegistry()
    rec = EventRecorder(sink, clock=clock, registry=reg, queue_size=queue_size, retry_sleep=1.0)
    return rec, clock, reg


async def drain(rec: EventRecorder, clock: FakeClock) -> None:
    task = asyncio.create_task(rec.flush())
    for _ in range(100):
        await clock.settle()
        if task.done():
            return
        clock.step(1)
    await task


async def test_first_event_is_created_with_reference_source_and_count_one() -> None:
    sink = RecordingSink()
    rec, clock, _ = recorder(sink)
    rec.start()
    rec.event(JOB, NORMAL, "Created", "launcher created")
    await drain(rec, clock)
    assert [c[0] for c in sink.calls] == ["create"]
    ev = sink.calls[0][1]
    assert ev["metadata"]["namespace"] == "team"
    assert ev["metadata"]["name"].startswith("pi.")
    assert ev["involvedObject"] == {
        "kind": "MPIJob",
        "apiVersion": "kubeflow.org/v2beta1",
        "namespace": "team",
        "name": "pi",
        "uid": "u-1",
        "resourceVersion": "7",
    }
    assert ev["source"] == {"component": "mpi-job-controller"}
    assert ev["reportingComponent"] == "mpi-job-controller"
    assert ev["count"] == 1
    assert ev["type"] == NORMAL
    await rec.stop()


async def test_identical_event_is_patched_with_incremented_count_not_recreated() -> None:
    sink = RecordingSink()
    rec, clock, _ = recorder(sink)
    rec.start()
    rec.event(JOB, WARNING, "Failed", "boom")
    await drain(rec, clock)
    clock.step(30)
    rec.event(JOB, WARNING, "Failed", "boom")
    rec.event(JOB, WARNING, "Failed", "boom")
    await drain(rec, clock)
    assert [c[0] for c in sink.calls] == ["create", "patch", "patch"]
    patch = sink.calls[2][1]
    assert patch["count"] == 3
    assert patch["message"] == "boom"
    (stored,) = sink.stored.values()
    assert stored["count"] == 3
    assert stored["lastTimestamp"] == "2026-01-01T00:00:30Z"
    assert stored["firstTimestamp"] == "2026-01-01T00:00:00Z"
    await rec.stop()


async def test_patch_of_a_vanished_event_falls_back_to_create() -> None:
    sink = RecordingSink()
    rec, clock, _ = recorder(sink)
    rec.start()
    rec.event(JOB, NORMAL, "Running", "all up")
    await drain(rec, clock)
    sink.stored.clear()
    rec.event(JOB, NORMAL, "Running", "all up")
    await drain(rec, clock)
    assert [c[0] for c in sink.calls] == ["create", "patch", "create"]
    assert "resourceVersion" not in sink.calls[2][1]["metadata"]
    await rec.stop()


async def test_similar_events_are_aggregated_after_ten_distinct_messages() -> None:
    sink = RecordingSink()
    rec, clock, _ = recorder(sink)
    rec.start()
    for i in range(12):
        rec.event(JOB, WARNING, "PodFailed", f"pod {i} failed")
    await drain(rec, clock)
    kinds = [c[0] for c in sink.calls]
    # Nine distinct messages are written as they are; the tenth starts the
    # combined event, and later similar ones only bump its count.
    assert kinds == ["create"] * 10 + ["patch", "patch"]
    combined = sink.calls[9][1]
    assert combined["message"] == COMBINED_PREFIX + "pod 9 failed"
    assert sink.calls[10][1]["count"] == 2
    assert sink.calls[11][1]["count"] == 3
    assert sink.calls[11][1]["message"] == COMBINED_PREFIX + "pod 11 failed"
    await rec.stop()


async def test_spam_filter_drops_events_beyond_burst_per_object() -> None:
    sink = RecordingSink()
    rec, clock, _ = recorder(sink)
    rec.start()
    for i in range(30):
        rec.event(JOB, NORMAL, f"Reason{i}", "m")
    await drain(rec, clock)
    assert len(sink.calls) == 25
    clock.step(300)
    rec.event(JOB, NORMAL, "Later", "m")
    await drain(rec, clock)
    assert len(sink.calls) == 26, "one token refills every five minutes"
    await rec.stop()


async def test_messages_are_truncated_to_1024_characters() -> None:
    sink = RecordingSink()
    rec, clock, _ = recorder(sink)
    rec.start()
    rec.event(JOB, NORMAL, "Long", "x" * 5000)
    await drain(rec, clock)
    assert len(sink.calls[0][1]["message"]) == MAX_MESSAGE_LENGTH
    await rec.stop()


async def test_full_queue_drops_events_and_counts_them_without_blocking() -> None:
    sink = RecordingSink()
    rec, _, reg = recorder(sink, queue_size=2)
    for i in range(5):
        rec.event(JOB, NORMAL, "R", f"m{i}")
    assert reg.get_sample_value("mpi_operator_events_dropped_total") == 3


async def test_invalid_event_type_is_dropped() -> None:
    sink = RecordingSink()
    rec, clock, _ = recorder(sink)
    rec.start()
    rec.event(JOB, "Bogus", "R", "m")
    await drain(rec, clock)
    assert sink.calls == []
    await rec.stop()


async def test_network_errors_are_retried_but_server_errors_are_not() -> None:
    sink = RecordingSink()
    sink.network_failures = 2
    rec, clock, _ = recorder(sink)
    rec.start()
    rec.event(JOB, NORMAL, "Retry", "m")
    await drain(rec, clock)
    assert [c[0] for c in sink.calls] == ["create"]

    async def reject(event: dict[str, Any]) -> dict[str, Any]:
        sink.calls.append(("rejected", event))
        raise ApiError(403, {"reason": "Forbidden", "message": "no"})

    sink.create = reject  # type: ignore[method-assign]
    rec.event(JOB, NORMAL, "Other", "m")
    await drain(rec, clock)
    assert [c[0] for c in sink.calls] == ["create", "rejected"]
    await rec.stop()


async def test_cluster_scoped_objects_get_events_in_default_namespace() -> None:
    sink = RecordingSink()
    rec, clock, _ = recorder(sink)
    rec.start()
    rec.event({"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n1"}}, NORMAL, "R", "m")
    await drain(rec, clock)
    assert sink.calls[0][1]["metadata"]["namespace"] == "default"
    await rec.stop()
