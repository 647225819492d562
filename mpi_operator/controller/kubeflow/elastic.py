"""An elastic MPIJob's lost workers and its count below the replicas (pure; ours).

With ``spec.elasticPolicy`` a worker pod that fails (an eviction included) is lost,
not fatal: the sync deletes it (the next sync recreates it, same name) and reports it
with a ``MPIJobWorkerLost`` Warning naming the worker and why; ``discover_hosts.sh``
lists Running workers only, so the host has left it by then. A failure policy's
FailJob rule still fails the job at once; any other outcome only replaces the worker.

Once the job has run, the ``BelowReplicas`` condition says whether fewer workers are
Running than the spec asks for: reason ``MPIJobBelowReplicas`` while at least
``minReplicas`` run, ``MPIJobBelowMinReplicas`` below that, and False
(``MPIJobAtReplicas``) once every worker runs again. Its lastUpdateTime is when the job
fell below ``minReplicas``: ``belowMinTimeoutSeconds`` later the failure policy applies
(a restart of the whole job, within maxRestarts), or without one the job fails; either
way naming the last lost worker (``status.lastFailure``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import (
    ConditionType,
    FailurePolicyAction,
    MPIJob,
    ReplicaType,
)
from mpi_operator.client.events import NORMAL, WARNING
from mpi_operator.controller.core.objects import is_terminating, parse_time, uid_of
from mpi_operator.controller.core.writes import Event
from mpi_operator.controller.kubeflow.conditions import (
    BELOW_REPLICAS,
    FALSE,
    TRUE,
    get_condition,
    has_true_condition,
    update_conditions,
)
from mpi_operator.controller.kubeflow.culprit import FailedPod, failed_pods
from mpi_operator.controller.kubeflow.policy import (
    REACHED_MAX_RESTARTS_REASON,
    RESTARTING_REASON,
    Verdict,
    match,
)

WORKER_LOST_REASON = "MPIJobWorkerLost"
BELOW_REPLICAS_REASON = "MPIJobBelowReplicas"
BELOW_MIN_REPLICAS_REASON = "MPIJobBelowMinReplicas"
AT_REPLICAS_REASON = "MPIJobAtReplicas"
#: ``belowMinTimeoutSeconds`` when unset.
DEFAULT_BELOW_MIN_TIMEOUT_SECONDS = 300


def is_elastic(job: MPIJob) -> bool:
    return job.spec.elastic_policy is not None


def _replicas(job: MPIJob) -> int:
    spec = job.replica_spec(ReplicaType.WORKER)
    return (spec.replicas or 0) if spec is not None else 0


def min_replicas(job: MPIJob) -> int:
    policy = job.spec.elastic_policy
    return (policy.min_replicas if policy is not None else None) or 1


def below_min_timeout(job: MPIJob) -> int:
    policy = job.spec.elastic_policy
    timeout = policy.below_min_timeout_seconds if policy is not None else None
    return DEFAULT_BELOW_MIN_TIMEOUT_SECONDS if timeout is None else timeout


@dataclass(slots=True)
class Losses:
    """The workers an elastic job lost in this sync (earliest first) and the workers as
    they are counted from now: each lost one as a pod that has not started."""

    lost: list[FailedPod] = field(default_factory=list)
    workers: list[Obj] = field(default_factory=list)


def _counted_as_missing(pod: Obj) -> Obj:
    meta = pod.get("metadata") or {}
    return {"metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")}}


def losses(
    job: MPIJob, workers: Sequence[Obj], failed: Sequence[Obj], deleted: frozenset[str]
) -> Losses:
    """Of the ``failed`` worker pods (those the run may still lose), the ones the job
    loses: all of them, but for those a failure policy's FailJob rule matches (left to
    the policy, which fails the job). Those and the pods an earlier sync deleted
    (``deleted``, uids) count as not started, and so does a pod being deleted (by us, a
    drain's eviction or anyone): it is going, and is recreated once gone."""
    policy = job.spec.run_policy.failure_policy
    lost = [
        f
        for f in failed_pods(failed)
        if policy is None or match(policy, f).action != FailurePolicyAction.FAIL_JOB
    ]
    uids = {f.uid for f in lost} | deleted
    counted = [
        _counted_as_missing(w) if uid_of(w) in uids or is_terminating(w) else w for w in workers
    ]
    return Losses(lost, counted)


def lost_events(job: MPIJob, lost: Sequence[FailedPod]) -> list[Event]:
    """One Warning per lost worker, naming it and why."""
    return [
        Event(
            WARNING,
            WORKER_LOST_REASON,
            f"{f.message}; it leaves discover_hosts.sh and is recreated "
            f"(MPIJob {job.namespace}/{job.name} keeps running, minReplicas {min_replicas(job)})",
        )
        for f in lost
    ]


def below_min_seconds_left(job: MPIJob, now: datetime) -> float | None:
    """Until the time below ``minReplicas`` is over; None while the job is not below."""
    status = job.status
    if status is None or not is_elastic(job):
        return None
    condition = get_condition(status, BELOW_REPLICAS)
    if condition is None or condition.status != TRUE:
        return None
    if condition.reason != BELOW_MIN_REPLICAS_REASON:
        return None
    since = parse_time(condition.last_update_time or condition.last_transition_time)
    if since is None:
        return None
    return since + below_min_timeout(job) - now.timestamp()


def track(job: MPIJob, running: int, now: datetime) -> list[Event]:
    """Sets the ``BelowReplicas`` condition of a running elastic job from its count of
    Running workers; returns the events of a change."""
    status = job.status
    if status is None or not has_true_condition(status, ConditionType.RUNNING):
        return []
    replicas, low, key = _replicas(job), min_replicas(job), f"{job.namespace}/{job.name}"
    if running >= replicas:
        if not has_true_condition(status, BELOW_REPLICAS):
            return []
        message = f"MPIJob {key} runs all {replicas} workers again."
        update_conditions(status, BELOW_REPLICAS, FALSE, AT_REPLICAS_REASON, message, now)
        return [Event(NORMAL, AT_REPLICAS_REASON, message)]
    if running >= low:
        message = (
            f"MPIJob {key} runs fewer workers than its {replicas} replicas (at least "
            f"minReplicas {low}); the missing ones are recreated."
        )
        if update_conditions(status, BELOW_REPLICAS, TRUE, BELOW_REPLICAS_REASON, message, now):
            return [Event(NORMAL, BELOW_REPLICAS_REASON, message)]
        return []
    timeout = below_min_timeout(job)
    message = (
        f"MPIJob {key} runs fewer workers than minReplicas {low}; unless enough run again "
        f"within {timeout}s, {_then(job)}."
    )
    if update_conditions(status, BELOW_REPLICAS, TRUE, BELOW_MIN_REPLICAS_REASON, message, now):
        return [Event(WARNING, BELOW_MIN_REPLICAS_REASON, message)]
    return []


def _then(job: MPIJob) -> str:
    if job.spec.run_policy.failure_policy is None:
        return "the job fails"
    return "the failure policy restarts the job (within maxRestarts) or fails it"


def _culprit(job: MPIJob, not_running: Sequence[str]) -> FailedPod:
    """The last lost worker (``status.lastFailure``), else the first worker not Running."""
    recorded = job.status.last_failure if job.status is not None else None
    if recorded is not None and recorded.pod and recorded.replica_type == ReplicaType.WORKER:
        terminations: tuple[tuple[str, int, str], ...] = ()
        if recorded.container is not None and recorded.exit_code is not None:
            terminations = ((recorded.container, recorded.exit_code, recorded.reason or ""),)
        return FailedPod(
            role="worker",
            pod=recorded.pod,
            uid="",
            container=recorded.container,
            exit_code=recorded.exit_code,
            reason=recorded.reason,
            pod_reason=recorded.pod_reason,
            pod_message=None,
            conditions=(),
            terminations=terminations,
            finished_at=recorded.time or "",
        )
    name = not_running[0] if not_running else f"{job.name}-worker"
    return FailedPod(
        role="worker",
        pod=name,
        uid="",
        container=None,
        exit_code=None,
        reason=None,
        pod_reason="NotRunning",
        pod_message=None,
        conditions=(),
        terminations=(),
        finished_at="",
    )


def timed_out(job: MPIJob, workers: Sequence[Obj], now: datetime) -> Verdict | None:
    """The verdict once the job ran below ``minReplicas`` for ``belowMinTimeoutSeconds``:
    without a failure policy the job fails; with one it restarts the whole job while
    restarts are left (maxRestarts), else fails. None before that."""
    left = below_min_seconds_left(job, now)
    if left is None or left > 0:
        return None
    not_running = [
        str(w["metadata"].get("name"))
        for w in workers
        if (w.get("status") or {}).get("phase") != "Running"
    ]
    culprit = _culprit(job, not_running)
    recorded = job.status.last_failure if job.status is not None else None
    cause = recorded.message if recorded is not None and recorded.pod == culprit.pod else None
    listed = ", ".join(not_running[:10]) + (", ..." if len(not_running) > 10 else "")
    message = (
        f"fewer than minReplicas {min_replicas(job)} workers Running for "
        f"{below_min_timeout(job)}s (not Running: {listed or 'none'}): {cause or culprit.message}"
    )
    policy = job.spec.run_policy.failure_policy
    if policy is None:
        return Verdict(FailurePolicyAction.FAIL_JOB, BELOW_MIN_REPLICAS_REASON, message, culprit)
    limit = policy.max_restarts or 0
    count = (job.status.restart_count if job.status is not None else None) or 0
    if count >= limit:
        message = f"reached maxRestarts {limit}: {message}"
        return Verdict(FailurePolicyAction.FAIL_JOB, REACHED_MAX_RESTARTS_REASON, message, culprit)
    message = f"restart {count + 1} of {limit}: {message}"
    return Verdict(FailurePolicyAction.RESTART_JOB, RESTARTING_REASON, message, culprit)
