"""Condition transition rules, as the reference operator applies them, and the
state (latest true condition) that our operator adds for display.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from test_next_status import make_job

from mpi_operator.api.v2beta1 import JobStatus, MPIJob
from mpi_operator.api.v2beta1.types import ElasticPolicy
from mpi_operator.controller.kubeflow.conditions import (
    get_condition,
    is_failed,
    is_finished,
    is_succeeded,
    refresh_state,
    update_conditions,
)
from mpi_operator.controller.kubeflow.job_status import update_status

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(minutes=1)


def summary(status: JobStatus) -> list[tuple[str, str, str | None]]:
    return [(c.type, c.status, c.reason) for c in status.conditions or []]


def test_same_status_and_reason_changes_nothing() -> None:
    status = JobStatus()
    assert update_conditions(status, "Running", "True", "MPIJobRunning", "a", T0)
    assert not update_conditions(status, "Running", "True", "MPIJobRunning", "b", T1)
    condition = get_condition(status, "Running")
    assert condition is not None and condition.message == "a"


def test_same_status_new_reason_keeps_transition_time() -> None:
    status = JobStatus()
    update_conditions(status, "Failed", "True", "A", "a", T0)
    assert update_conditions(status, "Failed", "True", "B", "b", T1)
    condition = get_condition(status, "Failed")
    assert condition is not None
    assert condition.last_transition_time == "2026-01-01T00:00:00Z"
    assert condition.last_update_time == "2026-01-01T00:01:00Z"


def test_running_and_restarting_exclude_each_other() -> None:
    status = JobStatus()
    update_conditions(status, "Running", "True", "R", "", T0)
    update_conditions(status, "Restarting", "True", "X", "", T0)
    assert summary(status) == [("Restarting", "True", "X")]
    update_conditions(status, "Running", "True", "R", "", T0)
    assert summary(status) == [("Running", "True", "R")]


def test_finishing_turns_running_false_and_moves_last() -> None:
    status = JobStatus()
    update_conditions(status, "Created", "True", "C", "", T0)
    update_conditions(status, "Running", "True", "R", "", T0)
    update_conditions(status, "Succeeded", "True", "S", "", T1)
    assert summary(status) == [
        ("Created", "True", "C"),
        ("Running", "False", "R"),
        ("Succeeded", "True", "S"),
    ]
    assert is_succeeded(status) and is_finished(status) and not is_failed(status)


# (conditions applied in order, expected status.state)
STATE_CASES = [
    ([], None),
    ([("Created", "True")], "Created"),
    ([("Created", "True"), ("Running", "True")], "Running"),
    # Suspending: Suspended turns True, then Running False is the latest change.
    (
        [("Created", "True"), ("Running", "True"), ("Suspended", "True"), ("Running", "False")],
        "Suspended",
    ),
    # Resuming: Suspended turns False last; until the pods run only Created is true.
    (
        [("Created", "True"), ("Suspended", "True"), ("Running", "False"), ("Suspended", "False")],
        "Created",
    ),
    (
        [("Created", "True"), ("Suspended", "True"), ("Suspended", "False"), ("Running", "True")],
        "Running",
    ),
    ([("Created", "True"), ("Running", "True"), ("Succeeded", "True")], "Succeeded"),
    ([("Created", "True"), ("Running", "True"), ("Failed", "True")], "Failed"),
]


def test_state_is_the_latest_true_condition() -> None:
    for changes, expected in STATE_CASES:
        status = JobStatus()
        for condition_type, condition_status in changes:
            update_conditions(status, condition_type, condition_status, "R", "", T0)
        refresh_state(status)
        assert status.state == expected, changes
        dumped = status.model_dump(by_alias=True, exclude_unset=True, mode="json")
        assert dumped.get("state") == expected, changes
        assert ("state" in dumped) == (expected is not None), changes


def test_state_is_dropped_when_no_condition_is_true() -> None:
    status = JobStatus.model_validate({"conditions": [], "state": "Running"})
    refresh_state(status)
    assert "state" not in status.model_dump(by_alias=True, exclude_unset=True, mode="json")


# ------------------------ test status ------------------------
#
# Status from the launcher Job and the worker pods (pure), table by table.


NOW = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
STAMP = "2026-11-21T12:00:00Z"


def pod(phase: str, reason: str = "", message: str = "", created: str = STAMP) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    return {"metadata": {"name": "p", "creationTimestamp": created}, "status": status}


def launcher(conditions: list[dict[str, Any]] | None = None, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "pi-launcher", "uid": "lu"},
        "spec": {},
        "status": {"conditions": conditions or [], **status},
    }


def conditions(job: MPIJob) -> list[tuple[str, str, str | None, str | None]]:
    assert job.status is not None
    return [(c.type, c.status, c.reason, c.message) for c in job.status.conditions or []]


def test_running_when_launcher_and_all_workers_run() -> None:
    job = make_job()
    out = update_status(job, launcher(), [pod("Running")], [pod("Running"), pod("Running")], NOW)
    assert conditions(job) == [("Running", "True", "MPIJobRunning", "MPIJob ns/pi is running.")]
    assert [(e.type, e.reason, e.message) for e in out.events] == [
        ("Normal", "MPIJobRunning", "MPIJob ns/pi is running")
    ]
    assert job.to_dict()["status"]["replicaStatuses"] == {
        "Launcher": {"active": 1},
        "Worker": {"active": 2},
    }


def test_not_running_while_a_worker_is_pending() -> None:
    job = make_job()
    out = update_status(job, launcher(), [pod("Running")], [pod("Running"), pod("Pending")], NOW)
    assert conditions(job) == [] and out.events == []


def test_succeeded_takes_the_launcher_completion_time() -> None:
    job = make_job()
    done = launcher(
        [{"type": "Complete", "status": "True"}], succeeded=1, completionTime="2026-11-21T11:59:00Z"
    )
    out = update_status(job, done, [], [pod("Running"), pod("Running")], NOW)
    assert job.status is not None
    assert job.status.completion_time == "2026-11-21T11:59:00Z"
    assert conditions(job) == [
        ("Succeeded", "True", "MPIJobSucceeded", "MPIJob ns/pi successfully completed."),
        (
            "Running",
            "False",
            "MPIJobRunning",
            "MPIJob ns/pi is finished but Running condition was never set.",
        ),
    ]
    running = job.status.conditions[-1]  # type: ignore[index]
    assert running.last_transition_time == "2026-11-21T11:59:00Z"
    assert out.succeeded and not out.failed
    assert job.to_dict()["status"]["replicaStatuses"]["Launcher"] == {"succeeded": 1}


def test_backoff_limit_failure_appends_the_last_failed_pod() -> None:
    job = make_job()
    failed = launcher(
        [
            {
                "type": "Failed",
                "status": "True",
                "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit",
            }
        ],
        failed=2,
    )
    pods = [
        pod("Failed", "OOMKilled", "first", created="2026-11-21T11:00:00Z"),
        pod("Failed", "Error", "second", created="2026-11-21T11:30:00Z"),
    ]
    out = update_status(job, failed, pods, [], NOW)
    assert conditions(job)[0] == (
        "Failed",
        "True",
        "BackoffLimitExceeded/Error",
        "Job has reached the specified backoff limit: second",
    )
    assert [(e.type, e.reason) for e in out.events] == [("Warning", "BackoffLimitExceeded/Error")]
    assert job.status is not None and job.status.completion_time == STAMP
    assert out.failed


def test_failure_without_reason_uses_the_defaults() -> None:
    job = make_job()
    update_status(job, launcher([{"type": "Failed", "status": "True"}]), [], [], NOW)
    assert conditions(job)[0] == ("Failed", "True", "MPIJobFailed", "MPIJob ns/pi has failed")


def test_evicted_workers_fail_the_job() -> None:
    job = make_job()
    out = update_status(
        job, launcher(), [pod("Running")], [pod("Failed", "Evicted"), pod("Running")], NOW
    )
    assert conditions(job)[0] == ("Failed", "True", "MPIJobEvicted", "1/2 workers are evicted")
    assert [e.reason for e in out.events] == ["MPIJobEvicted"]


@pytest.mark.parametrize("was_suspended", [False, True])
def test_suspend_and_resume(was_suspended: bool) -> None:
    job = make_job(suspend=not was_suspended)
    if was_suspended:
        job.status = JobStatus()
        update_conditions(
            job.status, "Suspended", "True", "MPIJobSuspended", "MPIJob suspended", NOW
        )
    out = update_status(job, None, [], [], NOW)
    if was_suspended:
        assert conditions(job)[0] == ("Suspended", "False", "MPIJobResumed", "MPIJob resumed")
        assert [e.reason for e in out.events] == ["MPIJobResumed"]
        assert job.status is not None and job.status.start_time == STAMP
    else:
        assert conditions(job) == [
            ("Suspended", "True", "MPIJobSuspended", "MPIJob suspended"),
            ("Running", "False", "MPIJobSuspended", "MPIJob ns/pi is suspended."),
        ]
        assert [e.reason for e in out.events] == ["MPIJobSuspended"]


def test_a_finished_job_never_runs_again() -> None:
    job = make_job()
    done = launcher([{"type": "Complete", "status": "True"}], completionTime=STAMP)
    update_status(job, done, [pod("Running")], [pod("Running"), pod("Running")], NOW)
    update_status(job, done, [pod("Running")], [pod("Running"), pod("Running")], NOW)
    assert ("Running", "True") not in [(c[0], c[1]) for c in conditions(job)]


def test_the_failed_pod_is_named_in_the_status_only() -> None:
    """Ours: status.lastFailure names the pod; the reference's conditions and events stay."""
    job = make_job()
    evicted = pod("Failed", "Evicted", "The node was low on resource memory.")
    evicted["metadata"].update(
        name="pi-worker-0", labels={"training.kubeflow.org/job-role": "worker"}
    )
    out = update_status(job, launcher(), [pod("Running")], [evicted, pod("Running")], NOW)
    assert [e.reason for e in out.events] == ["MPIJobEvicted"]
    assert job.status is not None and job.status.last_failure is not None
    assert job.status.last_failure.message == (
        "worker pi-worker-0 failed: Evicted: The node was low on resource memory."
    )
    assert job.status.completion_time == STAMP  # ours: the reference leaves it unset


def test_an_elastic_job_gets_the_workers_selector_for_its_scale_subresource() -> None:
    job = make_job()
    job.spec.elastic_policy = ElasticPolicy(min_replicas=1, max_replicas=4)
    update_status(job, launcher(), [pod("Running")], [pod("Running"), pod("Running")], NOW)
    assert job.to_dict()["status"]["replicaStatuses"]["Worker"] == {
        "active": 2,
        "selector": "training.kubeflow.org/job-name=pi,training.kubeflow.org/job-role=worker,"
        "training.kubeflow.org/operator-name=mpi-operator",
    }
