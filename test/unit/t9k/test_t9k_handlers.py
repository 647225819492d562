"""T9k informer handlers enqueue only T9k MPIJobs that exist."""

from __future__ import annotations

from typing import Any

from mpi_operator.api.t9k import API_VERSION, KIND
from mpi_operator.client import DeletedFinalStateUnknown, Indexer, Lister
from mpi_operator.controller.handlers import ChildHandlers, JobHandlers


def owned(kind: str, api_version: str, name: str = "pi", rv: str = "1") -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{name}-worker-0",
            "namespace": "ns",
            "resourceVersion": rv,
            "ownerReferences": [
                {
                    "apiVersion": api_version,
                    "kind": kind,
                    "name": name,
                    "uid": "u",
                    "controller": True,
                }
            ],
        }
    }


def handlers() -> tuple[ChildHandlers, list[str]]:
    indexer = Indexer()
    indexer.add({"metadata": {"name": "pi", "namespace": "ns"}})
    keys: list[str] = []
    return ChildHandlers(API_VERSION, KIND, Lister(indexer), keys.append), keys


def test_children_of_t9k_jobs_enqueue_their_job() -> None:
    h, keys = handlers()
    h.on_add(owned("MPIJob", "batch.tensorstack.dev/v1beta1"))
    h.on_delete(DeletedFinalStateUnknown("ns/x", owned("MPIJob", "batch.tensorstack.dev/v1beta1")))
    assert keys == ["ns/pi", "ns/pi"]


def test_other_owners_and_missing_jobs_are_ignored() -> None:
    h, keys = handlers()
    h.on_add(owned("MPIJob", "kubeflow.org/v2beta1"))
    h.on_add(owned("Job", "batch/v1"))
    h.on_add(owned("MPIJob", "batch.tensorstack.dev/v1beta1", name="gone"))
    h.on_add({"metadata": {"name": "x", "namespace": "ns"}})
    assert keys == []


def test_resyncs_are_ignored() -> None:
    h, keys = handlers()
    obj = owned("MPIJob", "batch.tensorstack.dev/v1beta1")
    h.on_update(obj, obj)
    h.on_update(obj, owned("MPIJob", "batch.tensorstack.dev/v1beta1", rv="2"))
    assert keys == ["ns/pi"]
    jobs: list[str] = []
    j = JobHandlers(jobs.append)
    job = {"metadata": {"name": "pi", "namespace": "ns", "resourceVersion": "1"}}
    j.on_add(job)
    j.on_update(job, job)
    assert jobs == ["ns/pi"]
