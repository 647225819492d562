"""mpi_operator_job_info holds one series per existing MPIJob with a launcher: the
series goes with its job, whether the informer reports the deletion or a sync that
was running when the job was deleted set it again afterwards."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from prometheus_client import CollectorRegistry

from mpi_operator.client.kubeapi import KubeClient
from mpi_operator.controller.kubeflow.controller import MPIJobController
from mpi_operator.controller.kubeflow.metrics import ControllerMetrics
from mpi_operator.controller.options import ControllerOptions


def _series(registry: CollectorRegistry) -> set[tuple[str, str]]:
    return {
        (s.labels["launcher"], s.labels["namespace"])
        for family in registry.collect()
        if family.name == "mpi_operator_job_info"
        for s in family.samples
    }


def _job(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"namespace": namespace, "name": name, "uid": f"uid-{name}"},
        "spec": {},
    }


def _controller(registry: CollectorRegistry) -> MPIJobController:
    stub = cast(Any, SimpleNamespace(host="https://x"))
    return MPIJobController(KubeClient(stub), ControllerOptions(), registry=registry)


def test_forget_job_removes_only_that_jobs_series() -> None:
    registry = CollectorRegistry()
    metrics = ControllerMetrics.create(registry)
    metrics.job_info.labels("pi-launcher", "a").set(1)
    metrics.job_info.labels("pi-launcher", "b").set(1)
    metrics.forget_job("a", "pi")
    assert _series(registry) == {("pi-launcher", "b")}
    metrics.forget_job("a", "never-had-a-launcher")  # no series: nothing to do
    assert _series(registry) == {("pi-launcher", "b")}


async def test_deleted_job_loses_its_job_info_series() -> None:
    registry = CollectorRegistry()
    controller = _controller(registry)
    informer = controller.informers.mpijobs
    for name in ("pi", "other"):
        informer.on_watch_event("ADDED", _job("ns", name))
        controller.metrics.job_info.labels(f"{name}-launcher", "ns").set(1)
    assert _series(registry) == {("pi-launcher", "ns"), ("other-launcher", "ns")}
    informer.on_watch_event("DELETED", _job("ns", "pi"))
    assert _series(registry) == {("other-launcher", "ns")}


async def test_series_set_by_a_sync_racing_the_deletion_is_removed() -> None:
    registry = CollectorRegistry()
    controller = _controller(registry)
    informer = controller.informers.mpijobs
    informer.on_watch_event("ADDED", _job("ns", "pi"))

    async def sync(key: str) -> None:
        # The job is deleted while its sync runs, which then sets the series.
        informer.on_watch_event("DELETED", _job("ns", "pi"))
        controller.metrics.job_info.labels("pi-launcher", "ns").set(1)

    await controller.scoped_sync(sync)("ns/pi")
    assert _series(registry) == set()
