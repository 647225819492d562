"""The MPIJob status computed from its launcher Job and worker pods (pure).

Mirrors the reference operator's status update, with one deliberate
difference: the Running, Succeeded and Evicted events are reported when the
condition changes, not again on every sync (the reference re-emits them and
relies on Event aggregation, which costs an API write per sync).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import (
    ConditionType,
    JobStatus,
    MPIJob,
    ReplicaStatus,
    ReplicaType,
)
from mpi_operator.builders.kubeflow.common import is_suspended, worker_selector
from mpi_operator.client.events import NORMAL, WARNING, truncate_message
from mpi_operator.controller.core.objects import FALSE as FALSE
from mpi_operator.controller.core.objects import TRUE as TRUE
from mpi_operator.controller.core.objects import (
    format_time,
    is_job_failed,
    is_job_succeeded,
    job_condition,
    pod_phase,
)
from mpi_operator.controller.core.objects import get_condition as get_condition
from mpi_operator.controller.core.writes import Event
from mpi_operator.controller.kubeflow.conditions import (
    EVICTED_REASON,
    FAILED_REASON,
    RESUMED_REASON,
    RUNNING_REASON,
    SUCCEEDED_REASON,
    SUSPENDED_REASON,
    is_finished,
    update_conditions,
)
from mpi_operator.controller.kubeflow.culprit import culprit

BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
POD_FAILED_REASON = "PodFailed"


@dataclass(slots=True)
class StatusOutcome:
    """What a status update found, beyond the status itself."""

    events: list[Event] = field(default_factory=list)
    succeeded: bool = False
    failed: bool = False


def replica_status(status: JobStatus, replica_type: ReplicaType) -> ReplicaStatus:
    """Resets the replica's status to zero counts and returns it."""
    statuses = dict(status.replica_statuses or {})
    fresh = ReplicaStatus()
    statuses[replica_type.value] = fresh
    status.replica_statuses = statuses
    return fresh


def _failed_reason_and_message(
    job: MPIJob, launcher: Obj, launcher_pods: Sequence[Obj]
) -> tuple[str, str]:
    condition = job_condition(launcher, "Failed") or {}
    reason = str(condition.get("reason") or "") or FAILED_REASON
    message = str(condition.get("message") or "") or f"MPIJob {job.namespace}/{job.name} has failed"
    if reason == BACKOFF_LIMIT_EXCEEDED:
        failed = [p for p in launcher_pods if pod_phase(p) == "Failed"]
        if failed:
            # The newest failed pod explains why the launcher gave up.
            last = max(failed, key=lambda p: str(p["metadata"].get("creationTimestamp") or ""))
            pod_status = last.get("status") or {}
            reason += "/" + str(pod_status.get("reason") or "")
            message = truncate_message(message + ": " + str(pod_status.get("message") or ""))
    return reason, message


def _name_the_culprit(job: MPIJob, out: StatusOutcome, pods: Sequence[Obj], now: datetime) -> None:
    """Ours: the reference's Failed condition and event stay as they are; the pod that
    failed first goes to ``status.lastFailure``, and, for a job with a failure policy
    (an opt-in), to a PodFailed Warning event."""
    found = culprit(pods)
    if found is None or job.status is None:
        return
    job.status.last_failure = found.status(format_time(now))
    if job.spec.run_policy.failure_policy is not None:
        out.events.append(Event(WARNING, POD_FAILED_REASON, found.message))


def _sync_suspension(status: JobStatus, out: StatusOutcome, suspended: bool, now: datetime) -> None:
    if suspended:
        if update_conditions(
            status, ConditionType.SUSPENDED, TRUE, SUSPENDED_REASON, "MPIJob suspended", now
        ):
            out.events.append(Event(NORMAL, "MPIJobSuspended", "MPIJob suspended"))
    elif get_condition(status, ConditionType.SUSPENDED) is not None and update_conditions(
        status, ConditionType.SUSPENDED, FALSE, RESUMED_REASON, "MPIJob resumed", now
    ):
        out.events.append(Event(NORMAL, "MPIJobResumed", "MPIJob resumed"))
        status.start_time = format_time(now)


def _launcher_status(
    job: MPIJob,
    out: StatusOutcome,
    launcher: Obj,
    launcher_pods: Sequence[Obj],
    now: datetime,
) -> int:
    """Counts the launcher and applies its success or failure; returns its running pods."""
    status = job.status
    assert status is not None
    running_launchers = sum(1 for p in launcher_pods if pod_phase(p) == "Running")
    launcher_status = replica_status(status, ReplicaType.LAUNCHER)
    failed_launchers = int((launcher.get("status") or {}).get("failed") or 0)
    if failed_launchers:  # zero counts stay unset, as Go's omitempty leaves them out
        launcher_status.failed = failed_launchers
    if is_job_succeeded(launcher):
        launcher_status.succeeded = 1
        message = f"MPIJob {job.namespace}/{job.name} successfully completed."
        if status.completion_time is None:
            status.completion_time = (launcher.get("status") or {}).get("completionTime")
        if update_conditions(status, ConditionType.SUCCEEDED, TRUE, SUCCEEDED_REASON, message, now):
            out.events.append(Event(NORMAL, SUCCEEDED_REASON, message))
            out.succeeded = True
    elif is_job_failed(launcher):
        reason, message = _failed_reason_and_message(job, launcher, launcher_pods)
        if status.completion_time is None:
            status.completion_time = format_time(now)
        if update_conditions(status, ConditionType.FAILED, TRUE, reason, message, now):
            out.events.append(Event(WARNING, reason, message))
            out.failed = True
    elif running_launchers:
        launcher_status.active = running_launchers
    return running_launchers


def _worker_status(
    job: MPIJob, status: JobStatus, out: StatusOutcome, workers: Sequence[Obj], now: datetime
) -> int:
    """Counts the workers and fails the job when any was evicted; returns those running.
    A job with an elastic policy also gets the workers' selector, which its scale
    subresource (and so a HorizontalPodAutoscaler) reads."""
    worker_status = replica_status(status, ReplicaType.WORKER)
    if job.spec.elastic_policy is not None:
        worker_status.selector = worker_selector(job.name)
    running = failed = succeeded = evicted = 0
    # Counted in locals, set once: this runs over every worker on every sync.
    for pod in workers:
        phase = pod_phase(pod)
        if phase == "Running":
            running += 1
        elif phase == "Failed":
            failed += 1
            if (pod.get("status") or {}).get("reason") == "Evicted":
                evicted += 1
        elif phase == "Succeeded":
            succeeded += 1
    # A count stays unset (not 0) when no worker is in that phase, as before.
    if failed:
        worker_status.failed = failed
    if succeeded:
        worker_status.succeeded = succeeded
    if running:
        worker_status.active = running
    if evicted:
        message = f"{evicted}/{len(workers)} workers are evicted"
        if status.completion_time is None:
            # Deviation: the reference leaves it unset, so the job never reads as done.
            status.completion_time = format_time(now)
        if update_conditions(status, ConditionType.FAILED, TRUE, EVICTED_REASON, message, now):
            out.events.append(Event(WARNING, EVICTED_REASON, message))
            out.failed = True
    return running


def _sync_running(
    status: JobStatus,
    out: StatusOutcome,
    key: str,
    suspended: bool,
    all_running: bool,
    now: datetime,
) -> None:
    if suspended:
        message = f"MPIJob {key} is suspended."
        update_conditions(status, ConditionType.RUNNING, FALSE, SUSPENDED_REASON, message, now)
    elif is_finished(status):
        if get_condition(status, ConditionType.RUNNING) is None:
            # A consumer measuring run time still finds a Running condition,
            # stamped with the completion time, when the job never ran visibly.
            stamp = status.completion_time or format_time(now)
            message = f"MPIJob {key} is finished but Running condition was never set."
            condition = update_conditions(
                status, ConditionType.RUNNING, FALSE, RUNNING_REASON, message, now
            )
            if condition:
                running_condition = get_condition(status, ConditionType.RUNNING)
                assert running_condition is not None
                running_condition.last_update_time = stamp
                running_condition.last_transition_time = stamp
    elif all_running:
        message = f"MPIJob {key} is running."
        if update_conditions(status, ConditionType.RUNNING, TRUE, RUNNING_REASON, message, now):
            out.events.append(Event(NORMAL, "MPIJobRunning", f"MPIJob {key} is running"))


def update_status(
    job: MPIJob,
    launcher: Obj | None,
    launcher_pods: Sequence[Obj],
    workers: Sequence[Obj],
    now: datetime,
    bystanders: Sequence[Obj] = (),
) -> StatusOutcome:
    """Brings ``job.status`` up to date in place and reports the events to emit.
    ``bystanders``: worker pods that are not counted but may be the culprit."""
    out = StatusOutcome()
    status = job.status = job.status or JobStatus()
    suspended = is_suspended(job)
    _sync_suspension(status, out, suspended, now)
    running_launchers = 0
    if launcher is not None:
        running_launchers = _launcher_status(job, out, launcher, launcher_pods, now)
    running = _worker_status(job, status, out, workers, now)
    if out.failed:
        _name_the_culprit(job, out, [*workers, *bystanders, *launcher_pods], now)
    all_running = launcher is not None and running_launchers >= 1 and running == len(workers)
    _sync_running(status, out, f"{job.namespace}/{job.name}", suspended, all_running, now)
    return out
