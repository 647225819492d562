"""The one author of a Kubeflow MPIJob's status (pure): the job, the sync's facts and
the time in; the new status, its events and the child writes it asks for out."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from mpi_operator.api.v2beta1 import MPIJob, set_defaults
from mpi_operator.controller.kubeflow.status import (
    Children,
    Clearing,
    Facts,
    Finished,
    Rejected,
    StatusUpdate,
    next_status,
)

NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)
STAMP = "2026-11-25T12:00:00Z"
EARLIER = "2026-11-25T11:00:00Z"
KEY = "ns/pi"
ROLE = "training.kubeflow.org/job-role"
ATTEMPT = "training.kubeflow.org/restart-attempt"

Obj = dict[str, Any]


def make_job(status: Obj | None = None, **run_policy: Any) -> MPIJob:
    obj: Obj = {
        "metadata": {"name": "pi", "namespace": "ns", "uid": "u"},
        "spec": {
            "runPolicy": run_policy,
            "mpiReplicaSpecs": {
                "Launcher": {"template": {"spec": {"containers": [{"name": "l"}]}}},
                "Worker": {
                    "replicas": 2,
                    "template": {"spec": {"containers": [{"name": "w"}]}},
                },
            },
        },
    }
    if status is not None:
        obj["status"] = status
    return set_defaults(MPIJob.from_dict(obj))


def cond(type_: str, status: str = "True", reason: str = "R", at: str = EARLIER) -> Obj:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": "m",
        "lastUpdateTime": at,
        "lastTransitionTime": at,
    }


CREATED = {"conditions": [cond("Created", reason="MPIJobCreated")], "startTime": EARLIER}


def pod(name: str, phase: str, role: str = "worker", **status: Any) -> Obj:
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {ROLE: role},
            "creationTimestamp": EARLIER,
        },
        "status": {"phase": phase, **status},
    }


def oom(name: str, attempt: int = 0) -> Obj:
    """A worker whose container was OOMKilled, made for restart ``attempt``."""
    terminated = {"exitCode": 137, "reason": "OOMKilled", "finishedAt": EARLIER}
    failed = pod(
        name, "Failed", containerStatuses=[{"name": "w", "state": {"terminated": terminated}}]
    )
    if attempt:
        failed["metadata"]["labels"][ATTEMPT] = str(attempt)
    return failed


def ready(name: str, is_ready: bool) -> Obj:
    flag = "True" if is_ready else "False"
    return pod(
        name, "Running" if is_ready else "Pending", conditions=[{"type": "Ready", "status": flag}]
    )


def launcher(*conditions: Obj, **status: Any) -> Obj:
    return {
        "metadata": {"name": "pi-launcher", "uid": "lu"},
        "spec": {},
        "status": {"conditions": list(conditions), **status},
    }


def job_cond(type_: str, reason: str = "", message: str = "") -> Obj:
    return {"type": type_, "status": "True", "reason": reason, "message": message}


RUNNING_PODS = Children(
    launcher(), [pod("l", "Running", "launcher")], [pod("w0", "Running"), pod("w1", "Running")]
)
NO_CHILDREN = Children(None, [], [])
RESTART_POLICY = {"maxRestarts": 2}


@dataclass
class Case:
    """The expected update: conditions as (type, status, reason), the status fields
    named in ``fields``, the events' reasons, and the update's flags."""

    job: MPIJob
    facts: Facts
    conditions: list[tuple[str, str, str]]
    events: list[str]
    fields: Obj = field(default_factory=dict)
    flags: Obj = field(default_factory=dict)


DEFAULT_FLAGS = {
    "created": False,
    "succeeded": False,
    "failed": False,
    "write": True,
    "stop_launcher": False,
    "clean_up": False,
    "ignored": [],
    "restart": False,
}

CASES = {
    "created": Case(
        make_job(),
        NO_CHILDREN,
        [("Created", "True", "MPIJobCreated")],
        ["MPIJobCreated"],
        {"startTime": STAMP, "state": "Created", "replicaStatuses": {"Worker": {}}},
        {"created": True},
    ),
    "created suspended: no startTime": Case(
        make_job(suspend=True),
        NO_CHILDREN,
        [
            ("Created", "True", "MPIJobCreated"),
            ("Suspended", "True", "MPIJobSuspended"),
            ("Running", "False", "MPIJobSuspended"),
        ],
        ["MPIJobCreated", "MPIJobSuspended"],
        {"startTime": None, "state": "Suspended", "replicaStatuses": {"Worker": {}}},
        {"created": True},
    ),
    "running": Case(
        make_job(CREATED),
        RUNNING_PODS,
        [("Created", "True", "MPIJobCreated"), ("Running", "True", "MPIJobRunning")],
        ["MPIJobRunning"],
        {
            "startTime": EARLIER,
            "state": "Running",
            "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {"active": 2}},
        },
    ),
    "succeeded, workers kept": Case(
        make_job(CREATED),
        Children(
            launcher(job_cond("Complete"), completionTime=STAMP, succeeded=1),
            [pod("l", "Succeeded", "launcher")],
            [pod("w0", "Running"), pod("w1", "Running")],
        ),
        [
            ("Created", "True", "MPIJobCreated"),
            ("Succeeded", "True", "MPIJobSucceeded"),
            ("Running", "False", "MPIJobRunning"),
        ],
        ["MPIJobSucceeded"],
        {
            "completionTime": STAMP,
            "state": "Succeeded",
            "replicaStatuses": {"Launcher": {"succeeded": 1}, "Worker": {"active": 2}},
        },
        {"succeeded": True, "stop_launcher": True},
    ),
    "succeeded, cleanPodPolicy Running resets the workers": Case(
        make_job(CREATED, cleanPodPolicy="Running"),
        Children(
            launcher(job_cond("Complete"), completionTime=STAMP, succeeded=1),
            [pod("l", "Succeeded", "launcher")],
            [pod("w0", "Running"), pod("w1", "Running")],
        ),
        [
            ("Created", "True", "MPIJobCreated"),
            ("Succeeded", "True", "MPIJobSucceeded"),
            ("Running", "False", "MPIJobRunning"),
        ],
        ["MPIJobSucceeded"],
        {"replicaStatuses": {"Launcher": {"succeeded": 1}, "Worker": {}}},
        {"succeeded": True, "stop_launcher": True, "clean_up": True},
    ),
    "launcher failed": Case(
        make_job(CREATED),
        Children(
            launcher(job_cond("Failed", "DeadlineExceeded", "too slow"), failed=1),
            [],
            [pod("w0", "Running"), pod("w1", "Running")],
        ),
        [
            ("Created", "True", "MPIJobCreated"),
            ("Failed", "True", "DeadlineExceeded"),
            ("Running", "False", "MPIJobRunning"),
        ],
        ["DeadlineExceeded"],
        {
            "completionTime": STAMP,
            "state": "Failed",
            "replicaStatuses": {"Launcher": {"failed": 1}, "Worker": {"active": 2}},
        },
        {"failed": True, "stop_launcher": True},
    ),
    "worker evicted": Case(
        make_job(CREATED, cleanPodPolicy="All"),
        Children(
            launcher(),
            [pod("l", "Running", "launcher")],
            [pod("w0", "Failed", reason="Evicted"), pod("w1", "Running")],
        ),
        [
            ("Created", "True", "MPIJobCreated"),
            ("Failed", "True", "MPIJobEvicted"),
            ("Running", "False", "MPIJobRunning"),
        ],
        ["MPIJobEvicted"],
        {"completionTime": STAMP, "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {}}},
        {"failed": True, "stop_launcher": True, "clean_up": True},
    ),
    "invalid pod template, on the first sync": Case(
        make_job(),
        Rejected("spec.containers[0].image: Required value"),
        [("Created", "True", "MPIJobCreated"), ("Failed", "True", "InvalidPodTemplate")],
        ["MPIJobCreated", "InvalidPodTemplate"],
        {"startTime": STAMP, "completionTime": STAMP, "state": "Failed"},
        {"created": True, "failed": True, "stop_launcher": True},
    ),
    "workers not Ready in time": Case(
        make_job(CREATED, workersReadyTimeoutSeconds=60),
        Children(None, [], [ready("w0", True), ready("w1", False)]),
        [("Created", "True", "MPIJobCreated"), ("Failed", "True", "WorkersNotReady")],
        ["WorkersNotReady"],
        {"completionTime": STAMP, "state": "Failed"},
        {"failed": True, "stop_launcher": True},
    ),
    "resumed": Case(
        make_job({**CREATED, "conditions": [*CREATED["conditions"], cond("Suspended")]}),
        NO_CHILDREN,
        [("Created", "True", "MPIJobCreated"), ("Suspended", "False", "MPIJobResumed")],
        ["MPIJobResumed"],
        {"startTime": STAMP, "state": "Created"},
    ),
    "restart by the failure policy": Case(
        make_job(CREATED, failurePolicy=RESTART_POLICY),
        Children(launcher(), [], [oom("w0"), pod("w1", "Running")]),
        [("Created", "True", "MPIJobCreated"), ("Restarting", "True", "MPIJobRestarting")],
        ["MPIJobRestarting"],
        {"restartCount": 1, "state": "Restarting", "completionTime": None},
        {"restart": True},
    ),
    "failure policy past maxRestarts fails the job": Case(
        make_job({**CREATED, "restartCount": 2}, failurePolicy=RESTART_POLICY),
        Children(launcher(), [], [oom("w0", attempt=2), pod("w1", "Running")]),
        [("Created", "True", "MPIJobCreated"), ("Failed", "True", "ReachedMaxRestarts")],
        ["ReachedMaxRestarts"],
        {"restartCount": 2, "state": "Failed", "completionTime": STAMP},
        {"failed": True, "stop_launcher": True},
    ),
    "failure ignored by a rule": Case(
        make_job(
            CREATED,
            failurePolicy={"rules": [{"action": "Ignore", "onPodReasons": ["Evicted"]}]},
        ),
        Children(launcher(), [], [pod("w0", "Failed", reason="Evicted"), ready("w1", True)]),
        [("Created", "True", "MPIJobCreated")],
        ["PodFailureIgnored"],
        {"replicaStatuses": {"Launcher": {}, "Worker": {"active": 1}}},
        {"ignored": [("w0", "uid-w0")]},
    ),
    "a failure an earlier sync ignored, its pod still cached": Case(
        make_job(
            CREATED,
            failurePolicy={"rules": [{"action": "Ignore", "onPodReasons": ["Evicted"]}]},
        ),
        Children(
            launcher(),
            [],
            [pod("w0", "Failed", reason="Evicted"), ready("w1", True)],
            deleted=frozenset({"uid-w0"}),
        ),
        [("Created", "True", "MPIJobCreated")],
        [],
        {"replicaStatuses": {"Launcher": {}, "Worker": {"active": 1}}},
        {"ignored": []},
    ),
    "a restart clearing the last attempt": Case(
        make_job({"conditions": CREATED["conditions"]}, failurePolicy=RESTART_POLICY),
        Clearing(),
        [("Created", "True", "MPIJobCreated")],
        [],
        {"startTime": STAMP, "replicaStatuses": None},
    ),
    "finished earlier, cleanPodPolicy Running: replica status reset": Case(
        make_job(
            {
                "conditions": [cond("Created"), cond("Succeeded", reason="MPIJobSucceeded")],
                "completionTime": EARLIER,
                "replicaStatuses": {"Launcher": {"succeeded": 1}, "Worker": {"active": 2}},
            },
            cleanPodPolicy="Running",
        ),
        Finished(),
        [("Created", "True", "R"), ("Succeeded", "True", "MPIJobSucceeded")],
        [],
        {"replicaStatuses": {"Launcher": {"succeeded": 1}, "Worker": {}}, "startTime": None},
        {"stop_launcher": True, "clean_up": True},
    ),
    "finished earlier, pods kept: nothing to write": Case(
        make_job(
            {
                "conditions": [cond("Created"), cond("Succeeded", reason="MPIJobSucceeded")],
                "completionTime": EARLIER,
                "replicaStatuses": {"Worker": {"active": 2}},
            },
        ),
        Finished(),
        [("Created", "True", "R"), ("Succeeded", "True", "MPIJobSucceeded")],
        [],
        {"replicaStatuses": {"Worker": {"active": 2}}},
        {"stop_launcher": True, "write": False},
    ),
}


def flags(update: StatusUpdate) -> Obj:
    return {name: getattr(update, name) for name in DEFAULT_FLAGS}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_next_status(case: Case) -> None:
    before = copy.deepcopy(case.job.model_dump(by_alias=True, exclude_unset=True, mode="json"))
    update = next_status(case.job, case.facts, NOW)
    after = case.job.model_dump(by_alias=True, exclude_unset=True, mode="json")
    assert after == before, "next_status changed the job it was given"
    status = update.status.model_dump(by_alias=True, exclude_unset=True, mode="json")
    got = [(c["type"], c["status"], c["reason"]) for c in status.get("conditions") or []]
    assert got == case.conditions
    assert [e.reason for e in update.events] == case.events
    assert {k: status.get(k) for k in case.fields} == case.fields
    assert flags(update) == {**DEFAULT_FLAGS, **case.flags}


def test_requeue_at_the_ready_deadline_counts_from_this_syncs_start_time() -> None:
    # The first sync sets startTime, and the workers' time to be Ready runs from it.
    update = next_status(
        make_job(workersReadyTimeoutSeconds=90),
        Children(None, [], [ready("w0", False), ready("w1", False)]),
        NOW,
    )
    assert update.requeue_after == 90.0
    assert update.status.start_time == STAMP


def test_the_failed_pod_is_named_in_last_failure() -> None:
    update = next_status(
        make_job(CREATED, failurePolicy=RESTART_POLICY),
        Children(launcher(), [], [oom("w0"), pod("w1", "Running")]),
        NOW,
    )
    failure = update.status.last_failure
    assert failure is not None
    assert (failure.pod, failure.exit_code, failure.reason) == ("w0", 137, "OOMKilled")
    assert update.events[0].message.startswith("restart 1 of 2 (rule default): worker w0")
