"""The T9k MPIJob status computed from its pods (pure).

* ``aggregate`` and ``tasks``: the pods' counts and, bounded in size, the pods
  themselves (:mod:`~mpi_operator.controller.t9k.tasks`).
* ``phase`` and ``conditions`` follow the launcher: Succeeded (Completed)
  when it exits 0, Failed when it exits non-zero or a worker fails (also
  ReplicaFailure); Running once every pod runs, Pending before. In debug mode
  the phase is Debugging and pod failures do not fail the job.

The sync calls :func:`decide` once: the new status and whether its write may wait
(a write that only reports a fan-out's progress, :func:`progress_only`), as the kit's
:class:`~mpi_operator.controller.core.writes.Decision`, which the kit's finish writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mpi_operator.api.object_model import Obj
from mpi_operator.api.t9k import (
    ConditionType,
    JobCondition,
    MPIJob,
    MPIJobStatus,
    Phase,
)
from mpi_operator.builders.t9k.common import launcher_name, worker_name
from mpi_operator.builders.t9k.pods import pod_run_mode, run_mode
from mpi_operator.client.events import NORMAL, WARNING
from mpi_operator.controller.core.objects import (
    FALSE,
    TRUE,
    format_time,
    get_condition,
    is_terminating,
    pod_phase,
)
from mpi_operator.controller.core.writes import PROGRESS, Decision, Event, Spacing, dump_status
from mpi_operator.controller.t9k.tasks import aggregate_and_tasks, listing, progress_only, slots

__all__ = ["progress_only", "slots"]

TERMINAL_PHASES = (Phase.SUCCEEDED.value, Phase.FAILED.value)


@dataclass(slots=True)
class StatusOutcome:
    events: list[Event] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class StatusUpdate:
    """The new status and the events to emit once it is written."""

    status: MPIJobStatus
    events: list[Event]

    @property
    def finished(self) -> bool:
        return self.status.phase in TERMINAL_PHASES


def is_true(status: MPIJobStatus, condition_type: str) -> bool:
    condition = get_condition(status, condition_type)
    return condition is not None and condition.status == TRUE


def set_condition(
    status: MPIJobStatus,
    condition_type: str,
    value: str,
    reason: str,
    message: str,
    now: datetime,
) -> bool:
    """Sets a condition; True when its status changed (or it is new)."""
    conditions = list(status.conditions or [])
    existing = get_condition(status, condition_type)
    if existing is not None:
        changed = existing.status != value
        if not changed and existing.reason == reason and existing.message == message:
            return False
        existing.status, existing.reason, existing.message = value, reason, message
        if changed:
            existing.last_transition_time = format_time(now)
        status.conditions = conditions
        return changed
    conditions.append(
        JobCondition(
            type=condition_type,
            status=value,
            reason=reason,
            message=message,
            last_transition_time=format_time(now),
        )
    )
    status.conditions = conditions
    return True


def _key(job: MPIJob) -> str:
    return f"{job.namespace}/{job.name}"


def _end(
    job: MPIJob,
    status: MPIJobStatus,
    out: StatusOutcome,
    succeeded: bool,
    reason: str,
    message: str,
    now: datetime,
) -> None:
    status.phase = (Phase.SUCCEEDED if succeeded else Phase.FAILED).value
    if succeeded:
        set_condition(status, ConditionType.COMPLETED, TRUE, reason, message, now)
        out.events.append(Event(NORMAL, "MPIJobSucceeded", message))
    else:
        set_condition(status, ConditionType.FAILED, TRUE, reason, message, now)
        out.events.append(Event(WARNING, "MPIJobFailed", message))
    if get_condition(status, ConditionType.RUNNING) is not None:
        set_condition(status, ConditionType.RUNNING, FALSE, reason, message, now)


def _initialized_and_debug(
    job: MPIJob, status: MPIJobStatus, out: StatusOutcome, now: datetime, *, created: bool
) -> None:
    key = _key(job)
    if created and set_condition(
        status,
        ConditionType.INITIALIZED,
        TRUE,
        "PodsCreated",
        f"MPIJob {key} created its pods",
        now,
    ):
        out.events.append(Event(NORMAL, "MPIJobInitialized", f"MPIJob {key} created its pods"))
    if status.phase not in TERMINAL_PHASES and job.debug is not None:
        message = f"MPIJob {key} is in debug mode"
        set_condition(status, ConditionType.DEBUGGING, TRUE, "DebugMode", message, now)
    elif get_condition(status, ConditionType.DEBUGGING) is not None:
        set_condition(status, ConditionType.DEBUGGING, FALSE, "DebugModeOff", "", now)


def _pause(
    job: MPIJob, status: MPIJobStatus, out: StatusOutcome, has_pods: bool, now: datetime
) -> None:
    """A paused job is Paused once its pods are gone."""
    if has_pods:
        return
    key = _key(job)
    if set_condition(status, ConditionType.PAUSED, TRUE, "Paused", f"MPIJob {key} is paused", now):
        out.events.append(Event(NORMAL, "MPIJobPaused", f"MPIJob {key} is paused"))
    status.phase = Phase.PAUSED.value
    if get_condition(status, ConditionType.RUNNING) is not None:
        set_condition(status, ConditionType.RUNNING, FALSE, "Paused", "", now)


def _resuming(
    job: MPIJob, status: MPIJobStatus, out: StatusOutcome, previous: str, now: datetime
) -> bool:
    """Whether the job is resuming from a pause (the first sync after it says so)."""
    key = _key(job)
    if is_true(status, ConditionType.PAUSED):
        set_condition(status, ConditionType.PAUSED, FALSE, "Resumed", f"MPIJob {key} resumed", now)
        out.events.append(Event(NORMAL, "MPIJobResuming", f"MPIJob {key} is resuming"))
        return True
    return previous == Phase.RESUMING.value


def _finished_by_pods(
    job: MPIJob,
    status: MPIJobStatus,
    out: StatusOutcome,
    launcher: Obj | None,
    workers: Sequence[Obj | None],
    now: datetime,
) -> bool:
    """Finishes the job when the launcher exited or a worker failed; True if it did."""
    key = _key(job)
    if pod_phase(launcher) == "Succeeded":
        message = f"MPIJob {key} successfully completed."
        _end(job, status, out, True, "LauncherSucceeded", message, now)
        return True
    if pod_phase(launcher) == "Failed":
        message = f"MPIJob {key} failed: the launcher exited with an error."
        _end(job, status, out, False, "LauncherFailed", message, now)
        return True
    failed = [f"{worker_name(job, i)}" for i, w in enumerate(workers) if pod_phase(w) == "Failed"]
    if not failed:
        return False
    message = f"MPIJob {key} failed: worker(s) {listing(failed)} failed."
    set_condition(status, ConditionType.REPLICA_FAILURE, TRUE, "WorkerFailed", message, now)
    _end(job, status, out, False, "WorkerFailed", message, now)
    return True


def _set_phase(
    job: MPIJob,
    status: MPIJobStatus,
    out: StatusOutcome,
    pods: Sequence[Obj | None],
    resuming: bool,
    now: datetime,
) -> None:
    """The phase of a job that runs (or is about to), and its Running condition."""
    key = _key(job)
    all_running = all(pod_phase(p) == "Running" for p in pods)
    if job.debug is not None:
        phase = Phase.DEBUGGING.value
    elif all_running:
        phase = Phase.RUNNING.value
    elif resuming:
        phase = Phase.RESUMING.value
    elif any(pod_phase(p) == "Unknown" for p in pods):
        phase = Phase.UNKNOWN.value
    else:
        phase = Phase.PENDING.value
    status.phase = phase
    if all_running and set_condition(
        status, ConditionType.RUNNING, TRUE, "AllPodsRunning", f"MPIJob {key} is running.", now
    ):
        out.events.append(Event(NORMAL, "MPIJobRunning", f"MPIJob {key} is running"))
    elif not all_running and get_condition(status, ConditionType.RUNNING) is not None:
        set_condition(status, ConditionType.RUNNING, FALSE, "PodsNotRunning", "", now)


def decide(
    job: MPIJob, pods: Mapping[str, Obj], now: datetime, written: Obj, *, pods_created: bool
) -> Decision[StatusUpdate]:
    """The sync's decision: :func:`next_status`, and whether its write may wait, from
    the status as ``written`` (the cached MPIJob's, in wire form)."""
    update = next_status(job, pods, now, pods_created=pods_created)
    new = dump_status(update.status)
    spacing = Spacing(PROGRESS, job.worker_replicas) if progress_only(written, new) else None
    return Decision(new, update.events, update, spacing=spacing)


def next_status(
    job: MPIJob, pods: Mapping[str, Obj], now: datetime, *, pods_created: bool
) -> StatusUpdate:
    """The one author of a T9k MPIJob's status: the new status from the job and its pods
    (``job`` is not changed). ``pods_created``: the job has pods, or created some."""
    status = job.status.model_copy(deep=True) if job.status is not None else MPIJobStatus()
    view = job.model_copy(update={"status": status})
    outcome = update_status(view, pods, now, pods_created=pods_created)
    return StatusUpdate(status, outcome.events)


def update_status(
    job: MPIJob, pods: Mapping[str, Obj], now: datetime, *, pods_created: bool
) -> StatusOutcome:
    """Brings ``job.status`` up to date in place and returns the events to emit (the
    step of :func:`next_status` that works on its copy)."""
    out = StatusOutcome()
    status = job.status = job.status or MPIJobStatus()
    if status.phase is None:
        status.phase = Phase.PENDING.value
    previous = status.phase
    finished = previous in TERMINAL_PHASES
    _initialized_and_debug(job, status, out, now, created=pods_created)
    aggregate, tasks = aggregate_and_tasks(job, pods, gone_means_deleted=finished or job.paused)
    status.aggregate, status.tasks = aggregate, tasks
    if finished:
        return out
    launcher, workers = _live_roles(job, pods)
    if job.paused and not pods_finished(job, pods):
        _pause(job, status, out, bool(pods), now)
        return out
    resuming = _resuming(job, status, out, previous, now)
    # Before a pause: an outcome the pods had before the pause was asked is kept.
    if job.debug is None and _finished_by_pods(job, status, out, launcher, workers, now):
        return out
    _set_phase(job, status, out, [launcher, *workers], resuming, now)
    return out


def _live_roles(job: MPIJob, pods: Mapping[str, Obj]) -> tuple[Obj | None, list[Obj | None]]:
    """The launcher pod and the worker pods, by index, that are not being deleted."""
    live = {n: p for n, p in pods.items() if not is_terminating(p)}
    workers = [live.get(worker_name(job, i)) for i in range(job.worker_replicas)]
    return live.get(launcher_name(job)), workers


def was_paused(job: MPIJob) -> bool:
    """A job that was paused once runs its pods with the resumeSpecs."""
    return job.status is not None and get_condition(job.status, ConditionType.PAUSED) is not None


def pods_finished(job: MPIJob, pods: Mapping[str, Obj]) -> bool:
    """The pods of the job's run mode end it (outside debug): its launcher exited or a
    worker failed. Pods built for another mode (debug just switched off) do not."""
    if job.debug is not None:
        return False
    mode = run_mode(job, was_paused(job))
    launcher, workers = _live_roles(job, {n: p for n, p in pods.items() if pod_run_mode(p) == mode})
    return pod_phase(launcher) in ("Succeeded", "Failed") or any(
        pod_phase(w) == "Failed" for w in workers
    )
