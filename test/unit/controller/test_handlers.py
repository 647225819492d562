"""Kubeflow informer handlers: a child's change enqueues the MPIJob controlling it; the
launcher pod resolves through its launcher Job."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.api.v2beta1 import API_VERSION, KIND
from mpi_operator.client import DeletedFinalStateUnknown, Indexer, Lister
from mpi_operator.client.clock import FakeClock
from mpi_operator.controller.core.expectations import CreationExpectations
from mpi_operator.controller.handlers import (
    ChildHandlers,
    JobHandlers,
    PodObserver,
    Urgent,
)
from mpi_operator.controller.kubeflow.children import ThroughLauncherJob
from mpi_operator.controller.kubeflow.policy import replacing_failed

Obj = dict[str, Any]


def obj(name: str, owner: tuple[str, str, str] | None = None, rv: str = "1") -> Obj:
    meta: Obj = {"name": name, "namespace": "ns", "resourceVersion": rv}
    if owner is not None:
        api_version, kind, owner_name = owner
        meta["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": owner_name, "controller": True}
        ]
    return {"metadata": meta}


MPIJOB = (API_VERSION, KIND, "pi")
LAUNCHER_JOB = ("batch/v1", "Job", "pi-launcher")


def handlers() -> tuple[ChildHandlers, list[str]]:
    mpijobs, jobs = Indexer(), Indexer()
    mpijobs.add(obj("pi"))
    jobs.add(obj("pi-launcher", MPIJOB))
    jobs.add(obj("plain-launcher"))  # a batch Job nobody controls
    keys: list[str] = []
    h = ChildHandlers(
        API_VERSION, KIND, Lister(mpijobs), keys.append, ThroughLauncherJob(Lister(jobs))
    )
    return h, keys


@pytest.mark.parametrize(
    ("child", "enqueued"),
    [
        (obj("pi-worker-0", MPIJOB), ["ns/pi"]),
        (obj("pi-launcher-x7k2p", LAUNCHER_JOB), ["ns/pi"]),
        (obj("pi-launcher-x7k2p", ("batch/v1", "Job", "missing")), []),
        (obj("p", ("batch/v1", "Job", "plain-launcher")), []),
        (obj("pi-worker-0", (API_VERSION, KIND, "deleted")), []),
        (obj("pi-worker-0", ("batch.tensorstack.dev/v1beta1", "MPIJob", "pi")), []),
        (obj("pi-worker-0", ("apps/v1", "ReplicaSet", "pi")), []),
        (obj("bare"), []),
    ],
)
def test_a_child_enqueues_the_existing_mpijob_controlling_it(
    child: Obj, enqueued: list[str]
) -> None:
    h, keys = handlers()
    h.on_add(child)
    assert keys == enqueued


def test_resyncs_are_ignored_and_tombstones_unwrapped() -> None:
    h, keys = handlers()
    pod = obj("pi-worker-0", MPIJOB)
    h.on_update(pod, pod)
    assert keys == []
    h.on_update(pod, obj("pi-worker-0", MPIJOB, rv="2"))
    h.on_delete(DeletedFinalStateUnknown("ns/pi-worker-0", pod))
    assert keys == ["ns/pi", "ns/pi"]


def test_without_batch_jobs_a_launcher_pod_is_not_resolved() -> None:
    mpijobs = Indexer()
    mpijobs.add(obj("pi"))
    keys: list[str] = []
    ChildHandlers(API_VERSION, KIND, Lister(mpijobs), keys.append).on_add(
        obj("pi-launcher-x7k2p", LAUNCHER_JOB)
    )
    assert keys == []


def test_pod_events_lower_the_expectations_of_the_controlling_mpijob() -> None:
    exp = CreationExpectations(FakeClock())
    exp.expect("ns/pi", ["pi-worker-0", "pi-worker-1", "pi-worker-2"])
    observer = PodObserver(API_VERSION, KIND, exp)
    observer.on_add(obj("pi-worker-0", MPIJOB))
    observer.on_delete(DeletedFinalStateUnknown("ns/pi-worker-1", obj("pi-worker-1", MPIJOB)))
    observer.on_add(obj("pi-worker-2", ("batch.tensorstack.dev/v1beta1", "MPIJob", "pi")))
    observer.on_add(obj("pi-worker-2"))
    assert exp.unobserved("ns/pi", []) == {"pi-worker-2"}


def test_a_deleted_mpijob_forgets_its_expectations() -> None:
    forgotten: list[str] = []
    handlers = JobHandlers(lambda key: None, on_deleted=forgotten.append)
    handlers.on_delete(obj("pi"))
    handlers.on_delete(DeletedFinalStateUnknown("ns/gone", obj("gone")))
    assert forgotten == ["ns/pi", "ns/gone"]


def restarting(reason: str) -> Obj:
    job = obj("pi")
    condition = {"type": "Restarting", "status": "True", "reason": reason}
    job["status"] = {"conditions": [condition]}
    return job


@pytest.mark.parametrize(
    ("mpijob", "at_once"),
    [
        (restarting("MPIJobRestartingFailed"), True),
        (restarting("MPIJobRestarting"), False),  # a whole restart: a thousand pods go
        (obj("pi"), False),
    ],
    ids=["restart-failed", "restart-job", "running"],
)
def test_a_restart_failed_restart_syncs_its_childrens_changes_at_once(
    mpijob: Obj, at_once: bool
) -> None:
    mpijobs, jobs = Indexer(), Indexer()
    mpijobs.add(mpijob)
    jobs.add(obj("pi-launcher", MPIJOB))
    batched: list[str] = []
    now: list[str] = []
    h = ChildHandlers(
        API_VERSION,
        KIND,
        Lister(mpijobs),
        batched.append,
        ThroughLauncherJob(Lister(jobs)),
        urgent=Urgent(replacing_failed, now.append),
    )
    h.on_delete(obj("pi-worker-1", MPIJOB))
    h.on_update(obj("pi-launcher", MPIJOB), obj("pi-launcher", MPIJOB, rv="2"))
    h.on_add(obj("pi-launcher-x7k2p", LAUNCHER_JOB))
    assert (now, batched) == ((["ns/pi"] * 3, []) if at_once else ([], ["ns/pi"] * 3))
