"""The one author of a Kubeflow MPIJob's status: a pure function from the job, what
the sync found (its children, or why it stopped before looking at them) and the
time, to the new status, its events and the child writes that go with it
(:func:`next_status`), including the workers' Ready timeout
(:mod:`~mpi_operator.controller.kubeflow.ready_timeout`) and an elastic job's lost
workers (:mod:`~mpi_operator.controller.kubeflow.elastic`).

The sync gathers the facts and calls :func:`decide` once: the new status, and whether
its write may wait (:func:`~.status_spacing.spacing_of`), as the kit's
:class:`~mpi_operator.controller.core.writes.Decision`. The kit's finish writes the
status once, and then the sync performs the child writes the written decision asks
for (:class:`StatusUpdate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import (
    CleanPodPolicy,
    ConditionType,
    FailurePolicyAction,
    JobStatus,
    MPIJob,
    ReplicaType,
)
from mpi_operator.builders.kubeflow.common import is_suspended
from mpi_operator.client.events import NORMAL, WARNING, truncate_message
from mpi_operator.controller.core.objects import (
    format_time,
    is_job_finished,
    is_job_past_deadline,
    is_job_succeeded,
    is_terminating,
    pod_phase,
)
from mpi_operator.controller.core.writes import (
    Decision,
    Event,
    dump_status,
)
from mpi_operator.controller.kubeflow.conditions import (
    CREATED_REASON,
    TRUE,
    get_condition,
    is_finished,
    refresh_state,
    update_conditions,
)
from mpi_operator.controller.kubeflow.culprit import failed_pod
from mpi_operator.controller.kubeflow.elastic import (
    below_min_seconds_left,
    is_elastic,
    losses,
    lost_events,
    timed_out,
    track,
)
from mpi_operator.controller.kubeflow.job_status import replica_status, update_status
from mpi_operator.controller.kubeflow.policy import Verdict, judge
from mpi_operator.controller.kubeflow.ready_timeout import (
    NOT_READY_REASON,
    not_ready_message,
    ready_seconds_left,
)
from mpi_operator.controller.kubeflow.status_spacing import spacing_of

#: The reason of the Failed condition when the API server rejects a pod template.
INVALID_POD_TEMPLATE = "InvalidPodTemplate"


@dataclass(frozen=True, slots=True)
class Children:
    """The children the sync created or found: the launcher Job (if any), its pods, and
    the worker pods. ``deleted``: uids of pods an earlier sync deleted whose deletion the
    cache does not show yet (a failure ignored there is not judged again). ``bystanders``:
    the worker pods of a job whose launcher Job finished: judged (the culprit, the
    failure policy), not counted, as the reference counts no workers then."""

    launcher: Obj | None
    launcher_pods: Sequence[Obj]
    workers: Sequence[Obj]
    deleted: frozenset[str] = frozenset()
    bystanders: Sequence[Obj] = ()


@dataclass(frozen=True, slots=True)
class Finished:
    """The job finished on an earlier sync (it has a completionTime)."""


@dataclass(frozen=True, slots=True)
class Clearing:
    """A restart is under way: an earlier attempt's children are going. ``failures``:
    workers a RestartFailed restart kept that failed since it was decided, judged by
    the failure policy like any other failure (``deleted`` as for :class:`Children`)."""

    failures: Sequence[Obj] = ()
    deleted: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Rejected:
    """The API server rejected a pod template as Invalid (its answer)."""

    message: str


#: What the sync found: exactly one of these (the children as they are after this
#: sync created or fixed them, when it got that far).
Facts = Finished | Clearing | Rejected | Children


@dataclass(slots=True)
class StatusUpdate:
    """The new status and its events, the metrics' facts, and the child writes that
    follow it once it is written: ``ignored`` pods to delete, the launcher to stop, the
    workers to clean up, and (``restart``) the earlier attempt to clear. ``write`` is
    False only for a job finished on an earlier sync whose pods stay: its status, as
    written then, is not written again."""

    status: JobStatus
    events: list[Event] = field(default_factory=list)
    created: bool = False
    succeeded: bool = False
    failed: bool = False
    write: bool = True
    stop_launcher: bool = False
    clean_up: bool = False
    ignored: list[tuple[str, str]] = field(default_factory=list)
    restart: bool = False
    requeue_after: float | None = None


def cleans_up(job: MPIJob) -> bool:
    """Whether ``cleanPodPolicy`` deletes the workers of a finished job."""
    return job.spec.run_policy.clean_pod_policy in (CleanPodPolicy.ALL, CleanPodPolicy.RUNNING)


def decide(job: MPIJob, facts: Facts, now: datetime, written: Obj) -> Decision[StatusUpdate]:
    """The sync's decision: :func:`next_status`, and whether its write may wait, from
    the status as ``written`` (the cached MPIJob's, in wire form)."""
    update = next_status(job, facts, now)
    new = dump_status(update.status)
    view = job.model_copy(update={"status": update.status})
    spacing = spacing_of(view, update.status, written, new)
    return Decision(new, update.events, update, update.write, spacing)


def next_status(job: MPIJob, facts: Facts, now: datetime) -> StatusUpdate:
    """The job's new status (``job`` is not changed)."""
    status = job.status.model_copy(deep=True) if job.status is not None else JobStatus()
    view = job.model_copy(update={"status": status})
    update = StatusUpdate(status=status)
    if isinstance(facts, Finished):
        _wind_down(view, update)
        update.write = update.clean_up
    else:
        _open(view, update, now)
        if isinstance(facts, Rejected):
            # Deviation from the reference (it retries forever): fail fast.
            message = (
                f"MPIJob {job.namespace}/{job.name} has failed: "
                f"the API server rejected its pod template: {facts.message}"
            )
            _fail(view, update, INVALID_POD_TEMPLATE, message, now)
        elif isinstance(facts, Children):
            _from_children(view, update, facts, now)
        elif isinstance(facts, Clearing) and facts.failures:
            _judge_kept(view, update, facts, now)
    refresh_state(status)
    return update


def _open(job: MPIJob, update: StatusUpdate, now: datetime) -> None:
    """Created on the first sync; startTime once the job is not suspended."""
    status = update.status
    if not status.conditions:
        message = f"MPIJob {job.namespace}/{job.name} is created."
        update_conditions(status, ConditionType.CREATED, TRUE, CREATED_REASON, message, now)
        update.events.append(Event(NORMAL, CREATED_REASON, message))
        update.created = True
    if status.start_time is None and not is_suspended(job):
        status.start_time = format_time(now)


def _wind_down(job: MPIJob, update: StatusUpdate) -> None:
    """A finished job: the launcher stops; cleanPodPolicy deletes the workers, whose
    replica status is then reset."""
    update.stop_launcher = True
    if cleans_up(job):
        update.clean_up = True
        replica_status(update.status, ReplicaType.WORKER)


def _fail(job: MPIJob, update: StatusUpdate, reason: str, message: str, now: datetime) -> None:
    """Fails the job for a reason of the sync's own (not a failed launcher)."""
    status = update.status
    message = truncate_message(message)
    if status.completion_time is None:
        status.completion_time = format_time(now)
    if update_conditions(status, ConditionType.FAILED, TRUE, reason, message, now):
        update.events.append(Event(WARNING, reason, message))
    update.failed = True
    _wind_down(job, update)


def _from_children(job: MPIJob, update: StatusUpdate, children: Children, now: datetime) -> None:
    if is_suspended(job):
        # The workers of a suspended job are deleted; their counts start afresh.
        replica_status(update.status, ReplicaType.WORKER)
    not_ready = not_ready_message(job, children.workers, now)
    if not_ready is not None:
        _fail(job, update, NOT_READY_REASON, not_ready, now)
        return
    update.requeue_after = ready_seconds_left(job, now)
    launcher, launcher_pods, workers = children.launcher, children.launcher_pods, children.workers
    policy = job.spec.run_policy.failure_policy
    # A launcher that succeeded after a retry leaves failed pods: not a failure. One
    # past activeDeadlineSeconds ends the job whatever its pods say, as without a policy.
    settled = launcher is not None and (
        is_job_succeeded(launcher) or is_job_past_deadline(launcher)
    )
    bystanders = children.bystanders
    # A launcher pod that succeeded ends the run (its Job is Complete a moment later): a
    # worker that failed after it is no failure of the run. One that failed first still
    # is: Open MPI 5's mpirun exits 0 after losing a worker's daemon.
    done_at = succeeded_at(launcher_pods)
    elastic = is_elastic(job) and not is_suspended(job)
    elastic = elastic and (launcher is None or not is_job_finished(launcher))
    if elastic:
        workers = _lose(job, update, workers, children.deleted, done_at, now)
    if policy is not None and not is_suspended(job) and not settled:
        judged = [w for w in (*workers, *bystanders) if not _failed_after(w, done_at)]
        judgement = judge(policy, job, launcher_pods, judged, children.deleted)
        update.ignored += [(m.failure.pod, m.failure.uid) for m in judgement.verdict.ignored]
        update.events += judgement.events
        launcher_pods = judgement.launcher_pods
        kept = {id(w) for w in judgement.workers}
        workers = [w for w in workers if id(w) in kept]
        bystanders = [w for w in bystanders if id(w) in kept]
        if judgement.verdict.action is not None:
            _apply_verdict(job, update, judgement.verdict, now)
            return
    outcome = update_status(job, launcher, launcher_pods, workers, now, bystanders)
    update.events += outcome.events
    update.succeeded, update.failed = outcome.succeeded, outcome.failed
    if is_finished(update.status):
        # Deviation: the reference cleans up on the sync after the one that finished
        # the job, and writes the status again; we stop the launcher and clean up
        # before the one write, so nothing runs on a finished job.
        _wind_down(job, update)
    elif elastic:
        _track(job, update, workers, now)


def _lose(
    job: MPIJob,
    update: StatusUpdate,
    workers: Sequence[Obj],
    deleted: frozenset[str],
    done_at: str | None,
    now: datetime,
) -> list[Obj]:
    """An elastic job's failed workers are lost, not fatal (:mod:`.elastic`): deleted
    after the write (and recreated), reported, counted as not started; returns the
    workers as counted."""
    failed = [
        w
        for w in workers
        if pod_phase(w) == "Failed"
        and not is_terminating(w)
        and w["metadata"].get("uid") not in deleted
        and not _failed_after(w, done_at)
    ]
    found = losses(job, workers, failed, deleted)
    update.ignored += [(f.pod, f.uid) for f in found.lost]
    update.events += lost_events(job, found.lost)
    if found.lost:
        update.status.last_failure = found.lost[0].status(format_time(now))
    return found.workers


def _track(job: MPIJob, update: StatusUpdate, workers: Sequence[Obj], now: datetime) -> None:
    """An elastic job's count below its replicas, and its time below minReplicas."""
    running = sum(1 for w in workers if pod_phase(w) == "Running")
    update.events += track(job, running, now)
    verdict = timed_out(job, workers, now)
    if verdict is None:
        left = below_min_seconds_left(job, now)
        if left is not None:
            update.requeue_after = min(left, update.requeue_after or left)
        return
    recorded = update.status.last_failure
    _apply_verdict(job, update, verdict, now)
    if recorded is not None and verdict.culprit is not None and recorded.pod == verdict.culprit.pod:
        update.status.last_failure = recorded  # as it was recorded when the worker was lost


def _judge_kept(job: MPIJob, update: StatusUpdate, clearing: Clearing, now: datetime) -> None:
    """A worker a RestartFailed restart kept failed while the restart is under way: the
    policy judges it as any failure (restart again, fail, or ignore it)."""
    policy = job.spec.run_policy.failure_policy
    assert policy is not None  # only a restart by the policy is cleared
    judgement = judge(policy, job, (), clearing.failures, clearing.deleted)
    update.ignored = [(m.failure.pod, m.failure.uid) for m in judgement.verdict.ignored]
    update.events += judgement.events
    if judgement.verdict.action is not None:
        _apply_verdict(job, update, judgement.verdict, now)


def succeeded_at(launcher_pods: Sequence[Obj]) -> str | None:
    """When a launcher pod succeeded (its containers' last finishedAt); None when none
    did. A pod that succeeded at an unknown time counts as succeeded at the start."""
    stamps: list[str] = []
    for pod in launcher_pods:
        if pod_phase(pod) != "Succeeded":
            continue
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        ended = [
            str(((c.get("state") or {}).get("terminated") or {}).get("finishedAt") or "")
            for c in statuses
        ]
        stamps.append(max(ended, default=""))
    return max(stamps) if stamps else None


def _failed_after(worker: Obj, done_at: str | None) -> bool:
    """The worker failed after the launcher pod succeeded at ``done_at`` (stamps have
    second precision: the same second counts as before)."""
    if done_at is None:
        return False
    failure = failed_pod(worker)
    return failure is not None and failure.finished_at > done_at


def _apply_verdict(job: MPIJob, update: StatusUpdate, verdict: Verdict, now: datetime) -> None:
    """The failure policy restarts the job (the old children go after the status write,
    so a failed write leaves them for the retry) or fails it."""
    update.events += mark(update.status, verdict, now)
    if verdict.action == FailurePolicyAction.FAIL_JOB:
        update.failed = True
        _wind_down(job, update)
    else:
        update.restart = True


def mark(status: JobStatus, verdict: Verdict, now: datetime) -> list[Event]:
    """Writes a restart or a failure by the policy into ``status``; returns its events."""
    assert verdict.culprit is not None
    stamp = format_time(now)
    status.last_failure = verdict.culprit.status(stamp)
    message = truncate_message(verdict.message)
    if verdict.action in (FailurePolicyAction.RESTART_JOB, FailurePolicyAction.RESTART_FAILED):
        status.restart_count = (status.restart_count or 0) + 1
        condition = ConditionType.RESTARTING
    else:
        condition = ConditionType.FAILED
        if status.completion_time is None:
            status.completion_time = stamp
    if not update_conditions(status, condition, TRUE, verdict.reason, message, now):
        # Restarting again before the job ran: same status and reason, a new message.
        current = get_condition(status, condition)
        assert current is not None
        current.message, current.last_update_time = message, stamp
    return [Event(WARNING, verdict.reason, message)]
