"""What a restart or a failure by the failure policy writes into the status (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

from mpi_operator.api.v2beta1 import FailurePolicyAction, JobStatus
from mpi_operator.controller.kubeflow.conditions import TRUE, get_condition, update_conditions
from mpi_operator.controller.kubeflow.policy import Decision, FailedPod
from mpi_operator.controller.kubeflow.status import mark

T0 = datetime(2026, 11, 25, 3, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 11, 25, 3, 0, 9, tzinfo=UTC)
OOM = FailedPod(
    role="worker",
    pod="pi-worker-1",
    uid="u",
    container="worker",
    exit_code=137,
    reason="OOMKilled",
    pod_reason=None,
    pod_message=None,
    conditions=(),
    terminations=(("worker", 137, "OOMKilled"),),
    finished_at="2026-11-25T02:59:59Z",
)


def restart(n: int) -> Decision:
    return Decision(
        FailurePolicyAction.RESTART_JOB, "MPIJobRestarting", f"restart {n} of 2 (rule oom)", OOM
    )


def test_a_restart_counts_replaces_running_and_names_the_pod() -> None:
    status = JobStatus()
    update_conditions(status, "Running", TRUE, "MPIJobRunning", "running", T0)
    events = mark(status, restart(1), T0)
    assert status.restart_count == 1
    assert [(c.type, c.status, c.reason) for c in status.conditions or []] == [
        ("Restarting", "True", "MPIJobRestarting")
    ]
    assert status.last_failure is not None and status.last_failure.pod == "pi-worker-1"
    assert [(e.type, e.reason, e.message) for e in events] == [
        ("Warning", "MPIJobRestarting", "restart 1 of 2 (rule oom)")
    ]
    assert status.completion_time is None
    # Restarting again before the job ran: the same condition gets the new message.
    mark(status, restart(2), T1)
    condition = get_condition(status, "Restarting")
    assert status.restart_count == 2
    assert condition is not None and condition.message == "restart 2 of 2 (rule oom)"
    assert condition.last_update_time == "2026-11-25T03:00:09Z"
    assert condition.last_transition_time == "2026-11-25T03:00:00Z"


def test_a_failure_by_the_policy_finishes_the_job() -> None:
    status = JobStatus()
    decision = Decision(FailurePolicyAction.FAIL_JOB, "ReachedMaxRestarts", "reached", OOM)
    events = mark(status, decision, T1)
    assert [(c.type, c.status, c.reason) for c in status.conditions or []] == [
        ("Failed", "True", "ReachedMaxRestarts")
    ]
    assert status.completion_time == "2026-11-25T03:00:09Z"
    assert status.restart_count is None
    assert [e.reason for e in events] == ["ReachedMaxRestarts"]
