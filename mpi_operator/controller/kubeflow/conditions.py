"""MPIJob conditions and the status counted from the launcher Job and worker pods (pure),
with the reference operator's transition rules:

* Setting a condition whose status and reason are unchanged is a no-op.
* A condition whose status is unchanged keeps its lastTransitionTime.
* Running and Restarting exclude each other.
* Setting Failed or Succeeded turns Running (and an earlier Failed) to False.
* The changed condition moves to the end of the list.
* ``status.state`` (ours, not the reference's) names the latest true condition,
  BelowReplicas aside (an elastic job below its replicas is still Running).
* BelowReplicas (ours) turns False when the job finishes, restarts or is suspended.

One deliberate difference: the Running, Succeeded and Evicted events are reported when
the condition changes, not again on every sync.
"""

from __future__ import annotations

from datetime import datetime

from mpi_operator.api.v2beta1 import (
    ConditionType,
    JobCondition,
    JobStatus,
)
from mpi_operator.controller.core.objects import FALSE as FALSE
from mpi_operator.controller.core.objects import TRUE as TRUE
from mpi_operator.controller.core.objects import (
    format_time,
)
from mpi_operator.controller.core.objects import get_condition as get_condition

CREATED_REASON = "MPIJobCreated"
SUCCEEDED_REASON = "MPIJobSucceeded"
RUNNING_REASON = "MPIJobRunning"
SUSPENDED_REASON = "MPIJobSuspended"
RESUMED_REASON = "MPIJobResumed"
FAILED_REASON = "MPIJobFailed"
EVICTED_REASON = "MPIJobEvicted"
#: Ours: an elastic job runs fewer workers than its replicas (:mod:`.elastic`). Not a
#: state (``status.state`` never names it), so not one of :class:`ConditionType`.
BELOW_REPLICAS = "BelowReplicas"


def has_true_condition(status: JobStatus, condition_type: str) -> bool:
    condition = get_condition(status, condition_type)
    return condition is not None and condition.status == TRUE


def is_succeeded(status: JobStatus) -> bool:
    return has_true_condition(status, ConditionType.SUCCEEDED)


def is_failed(status: JobStatus) -> bool:
    return has_true_condition(status, ConditionType.FAILED)


def is_finished(status: JobStatus) -> bool:
    return is_succeeded(status) or is_failed(status)


def latest_true_condition(status: JobStatus) -> str | None:
    """The type of the true condition nearest the end of the list: since a changed
    condition moves to the end, the one that became true last. BelowReplicas is no
    state: the job it is true of is Running."""
    for condition in reversed(status.conditions or []):
        if condition.status == TRUE and condition.type != BELOW_REPLICAS:
            return condition.type
    return None


def refresh_state(status: JobStatus) -> None:
    """Sets ``status.state`` from the conditions; leaves it unset while none is true."""
    state = latest_true_condition(status)
    if state is not None:
        status.state = state
    elif status.state is not None:
        status.state = None
        status.model_fields_set.discard("state")


def new_condition(
    condition_type: str, status: str, reason: str, message: str, now: datetime
) -> JobCondition:
    stamp = format_time(now)
    return JobCondition(
        type=condition_type,
        status=status,
        reason=reason,
        message=message,
        last_update_time=stamp,
        last_transition_time=stamp,
    )


#: Conditions whose setting ends BelowReplicas: the job no longer runs (or restarts).
_ENDS_BELOW_REPLICAS = {
    ConditionType.FAILED.value,
    ConditionType.SUCCEEDED.value,
    ConditionType.RESTARTING.value,
    ConditionType.SUSPENDED.value,
}


def _keep(existing: JobCondition, incoming_type: str) -> JobCondition | None:
    """What happens to an existing condition when ``incoming_type`` is set."""
    exclusive = {ConditionType.RUNNING.value, ConditionType.RESTARTING.value}
    if existing.type == incoming_type:
        return None
    if existing.type == BELOW_REPLICAS and incoming_type in _ENDS_BELOW_REPLICAS:
        return (
            existing.model_copy(update={"status": FALSE}) if existing.status == TRUE else existing
        )
    if {existing.type, incoming_type} == exclusive:
        return None
    finishing = incoming_type in (ConditionType.FAILED, ConditionType.SUCCEEDED)
    # Restarting (ours: only a failure policy sets it) ends with the job too.
    ended = (ConditionType.RUNNING, ConditionType.FAILED, ConditionType.RESTARTING)
    if finishing and existing.type in ended:
        return existing.model_copy(update={"status": FALSE})
    return existing


def set_condition(status: JobStatus, condition: JobCondition) -> bool:
    """Applies ``condition``; returns whether anything changed."""
    current = get_condition(status, condition.type)
    if current is not None and (current.status, current.reason) == (
        condition.status,
        condition.reason,
    ):
        return False
    if current is not None and current.status == condition.status:
        condition = condition.model_copy(
            update={"last_transition_time": current.last_transition_time}
        )
    kept = [c for c in (_keep(e, condition.type) for e in status.conditions or []) if c]
    status.conditions = [*kept, condition]
    return True


def update_conditions(
    status: JobStatus,
    condition_type: str,
    condition_status: str,
    reason: str,
    message: str,
    now: datetime,
) -> bool:
    return set_condition(
        status, new_condition(condition_type, condition_status, reason, message, now)
    )
