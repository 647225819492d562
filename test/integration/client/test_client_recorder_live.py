"""The event recorder against a real API server."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from devcluster.polling import eventually
from mpi_operator.client.events import NORMAL, WARNING, EventRecorder
from mpi_operator.client.kubeapi import CONFIGMAPS, EVENTS, KubeClient

pytestmark = pytest.mark.cluster


async def test_repeated_event_is_created_then_patched_to_count_two(
    kube: KubeClient, ns: str
) -> None:
    target = await kube.create(
        CONFIGMAPS, ns, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "job"}}
    )
    rec = EventRecorder(kube, registry=CollectorRegistry())
    rec.start()
    try:
        rec.event(target, WARNING, "Failed", "worker exited")
        await rec.flush()
        rec.event(target, WARNING, "Failed", "worker exited")
        rec.event(target, NORMAL, "Created", "launcher created")
        await rec.flush()

        async def events() -> list[dict[str, Any]]:
            items = (await kube.list(EVENTS, ns, field_selector="involvedObject.name=job"))["items"]
            return sorted(items, key=lambda e: e["reason"])

        async def settled() -> bool:
            got = await events()
            return [(e["reason"], e["count"]) for e in got] == [("Created", 1), ("Failed", 2)]

        await eventually(settled, what="one Failed event with count 2 and one Created event")
        _, failed = await events()
        assert failed["source"]["component"] == "mpi-job-controller"
        assert failed["involvedObject"]["uid"] == target["metadata"]["uid"]
        assert failed["involvedObject"]["kind"] == "ConfigMap"
        assert failed["lastTimestamp"] >= failed["firstTimestamp"]
        assert failed["message"] == "worker exited"
    finally:
        await rec.stop()
