"""The pure T9k status computation: phase, conditions, aggregate, tasks, events."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mpi_operator.api.t9k import MPIJob, parse, set_defaults
from mpi_operator.controller.t9k.status import next_status, update_status

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def make(**spec: Any) -> MPIJob:
    obj = {
        "metadata": {"name": "pi", "namespace": "ns", "uid": "u"},
        "spec": {
            "worker": {
                "replicas": 2,
                "cmd": ["x"],
                "template": {"spec": {"containers": [{"name": "c"}]}},
            },
            **spec,
        },
    }
    return set_defaults(parse(obj))


def pod(
    name: str, phase: str, exit_code: int | None = None, deleting: bool = False
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if deleting:
        meta["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    status: dict[str, Any] = {"phase": phase}
    if exit_code is not None:
        status["containerStatuses"] = [
            {"name": "c", "state": {"terminated": {"exitCode": exit_code}}}
        ]
    elif phase == "Running":
        status["containerStatuses"] = [{"name": "c", "state": {"running": {}}}]
    return {"metadata": meta, "status": status}


def pods(
    launcher: str, *workers: str, launcher_exit: int | None = None
) -> dict[str, dict[str, Any]]:
    out = {"pi-launcher": pod("pi-launcher", launcher, launcher_exit)}
    for i, phase in enumerate(workers):
        if phase:
            out[f"pi-worker-{i}"] = pod(f"pi-worker-{i}", phase)
    return out


def dump(job: MPIJob) -> dict[str, Any]:
    assert job.status is not None
    return job.status.model_dump(by_alias=True, exclude_unset=True, mode="json")


def agg(**counts: int) -> dict[str, int]:
    base = dict.fromkeys(
        ("creating", "pending", "running", "succeeded", "failed", "unknown", "deleted"), 0
    )
    return {**base, **counts}


def conds(job: MPIJob) -> dict[str, tuple[str, str]]:
    assert job.status is not None
    return {c.type: (c.status, c.reason or "") for c in job.status.conditions or []}


CASES: list[tuple[str, dict[str, Any], dict[str, Any], str, dict[str, int], set[str]]] = [
    ("nothing yet", {}, {}, "Pending", agg(creating=3), set()),
    (
        "some pending",
        {},
        pods("Pending", "Running", ""),
        "Pending",
        agg(pending=1, running=1, creating=1),
        {"MPIJobInitialized"},
    ),
    (
        "all running",
        {},
        pods("Running", "Running", "Running"),
        "Running",
        agg(running=3),
        {"MPIJobInitialized", "MPIJobRunning"},
    ),
    (
        "launcher exit 0",
        {},
        pods("Succeeded", "Running", "Running", launcher_exit=0),
        "Succeeded",
        agg(succeeded=1, running=2),
        {"MPIJobInitialized", "MPIJobSucceeded"},
    ),
    (
        "launcher exit 2",
        {},
        pods("Failed", "Running", "Running", launcher_exit=2),
        "Failed",
        agg(failed=1, running=2),
        {"MPIJobInitialized", "MPIJobFailed"},
    ),
    (
        "worker failed",
        {},
        pods("Running", "Failed", "Running"),
        "Failed",
        agg(failed=1, running=2),
        {"MPIJobInitialized", "MPIJobFailed"},
    ),
    (
        "unknown pod",
        {},
        pods("Running", "Unknown", "Running"),
        "Unknown",
        agg(unknown=1, running=2),
        {"MPIJobInitialized"},
    ),
    (
        "debug ignores failures",
        {"runMode": {"debug": {"enable": True}}},
        pods("Failed", "Failed", "Running", launcher_exit=1),
        "Debugging",
        agg(failed=2, running=1),
        {"MPIJobInitialized"},
    ),
    (
        "pause with pods left",
        {"runMode": {"pause": {"enabled": True}}},
        pods("Running", "Running", "Running"),
        "Pending",
        agg(running=3),
        {"MPIJobInitialized"},
    ),
    (
        "paused and gone",
        {"runMode": {"pause": {"enabled": True}}},
        {},
        "Paused",
        agg(deleted=3),
        {"MPIJobPaused"},
    ),
]


@pytest.mark.parametrize(
    ("spec", "pod_map", "phase", "aggregate", "events"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_fresh_status(
    spec: dict[str, Any],
    pod_map: dict[str, Any],
    phase: str,
    aggregate: dict[str, int],
    events: set[str],
) -> None:
    job = make(**spec)
    update = next_status(job, pod_map, NOW, pods_created=bool(pod_map))
    assert job.status is None, "next_status changed the job it was given"
    status = update.status.model_dump(by_alias=True, exclude_unset=True, mode="json")
    assert status["phase"] == phase
    assert status["aggregate"] == aggregate
    assert {e.reason for e in update.events} == events
    assert update.finished == (phase in ("Succeeded", "Failed"))


def test_next_status_leaves_the_given_status_alone() -> None:
    job = make()
    update_status(job, pods("Running", "Running", "Running"), NOW, pods_created=True)
    before = dump(job)
    update = next_status(job, pods("Running", "Failed", "Running"), NOW, pods_created=True)
    assert dump(job) == before
    assert (before["phase"], update.status.phase) == ("Running", "Failed")


def test_tasks_list_every_slot_with_container_states() -> None:
    job = make()
    update_status(job, pods("Succeeded", "Running", "", launcher_exit=0), NOW, pods_created=True)
    assert dump(job)["tasks"] == [
        {
            "replicaType": "launcher",
            "replicaIndex": 0,
            "replicas": [
                {
                    "name": "pi-launcher",
                    "uid": "uid-pi-launcher",
                    "phase": "Succeeded",
                    "containers": [{"name": "c", "containerPhase": "Terminated", "exitCode": 0}],
                }
            ],
        },
        {
            "replicaType": "worker",
            "replicaIndex": 0,
            "replicas": [
                {
                    "name": "pi-worker-0",
                    "uid": "uid-pi-worker-0",
                    "phase": "Running",
                    "containers": [{"name": "c", "containerPhase": "Running"}],
                }
            ],
        },
        {"replicaType": "worker", "replicaIndex": 1, "replicas": []},
    ]


def test_conditions_through_a_run() -> None:
    job = make()
    update_status(job, pods("Running", "Running", "Running"), NOW, pods_created=True)
    assert conds(job) == {
        "Initialized": ("True", "PodsCreated"),
        "Running": ("True", "AllPodsRunning"),
    }
    again = update_status(job, pods("Running", "Running", "Running"), NOW, pods_created=True)
    assert again.events == []  # level-triggered: no repeated events
    update_status(job, pods("Running", "Failed", "Running"), NOW, pods_created=True)
    assert conds(job) == {
        "Initialized": ("True", "PodsCreated"),
        "Running": ("False", "WorkerFailed"),
        "ReplicaFailure": ("True", "WorkerFailed"),
        "Failed": ("True", "WorkerFailed"),
    }
    # Finished is final: a later launcher success changes nothing but the counts.
    outcome = update_status(
        job, pods("Succeeded", "Failed", "", launcher_exit=0), NOW, pods_created=True
    )
    assert dump(job)["phase"] == "Failed"
    assert dump(job)["aggregate"] == agg(succeeded=1, failed=1, deleted=1)
    assert outcome.events == []


def test_pause_then_resume() -> None:
    job = make(runMode={"pause": {"enabled": True}})
    update_status(job, {}, NOW, pods_created=False)
    assert conds(job)["Paused"] == ("True", "Paused")
    job.spec.run_mode.pause.enabled = False  # type: ignore[union-attr]
    outcome = update_status(job, {}, NOW, pods_created=False)
    assert dump(job)["phase"] == "Resuming"
    assert conds(job)["Paused"] == ("False", "Resumed")
    assert [e.reason for e in outcome.events] == ["MPIJobResuming"]
    update_status(job, pods("Pending", "Running", "Running"), NOW, pods_created=True)
    assert dump(job)["phase"] == "Resuming"
    update_status(job, pods("Running", "Running", "Running"), NOW, pods_created=True)
    assert dump(job)["phase"] == "Running"


def test_terminating_pods_count_as_deleted() -> None:
    job = make()
    pod_map = pods("Running", "Running", "Running")
    pod_map["pi-worker-1"] = pod("pi-worker-1", "Running", deleting=True)
    update_status(job, pod_map, NOW, pods_created=True)
    assert dump(job)["aggregate"] == agg(running=2, deleted=1)
    assert dump(job)["phase"] == "Pending"
