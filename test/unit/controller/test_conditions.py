"""Condition transition rules, as the reference operator applies them, and the
state (latest true condition) that our operator adds for display."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mpi_operator.api.v2beta1 import JobStatus
from mpi_operator.controller.kubeflow.conditions import (
    get_condition,
    is_failed,
    is_finished,
    is_succeeded,
    refresh_state,
    update_conditions,
)

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
