"""The failure policy at work (ours): restart the gang, fail the job, or recreate a pod.

A restart is written to the status first (``restartCount`` up by one, a Restarting
condition, ``lastFailure``); the children of earlier attempts are then deleted on this
sync and on every later one until they are gone: every worker pod and the launcher Job
(its pods with it) for RestartJob; for RestartFailed only the workers that ended and
the launcher Job, while the healthy workers keep running. Only then are new ones
created, labelled with the attempt; after a RestartFailed the new launcher waits for
every worker to be Ready, whatever ``launcherCreationPolicy`` says. The Service,
ConfigMap, Secret and PodGroup stay, and ``runPolicy.suspend`` is not touched, so Kueue
keeps the job admitted. Pods a restart replaced are never judged again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

import structlog

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import (
    ConditionType,
    FailurePolicy,
    FailurePolicyAction,
    MPIJob,
)
from mpi_operator.builders.kubeflow.common import launcher_name
from mpi_operator.client import JOBS, PODS, WARNING, is_controlled_by
from mpi_operator.controller.core.objects import is_terminating, pod_phase
from mpi_operator.controller.core.owner import delete, first_error, run_all
from mpi_operator.controller.core.pods import deletes_now
from mpi_operator.controller.core.writes import Event
from mpi_operator.controller.kubeflow.conditions import TRUE, get_condition
from mpi_operator.controller.kubeflow.context import SyncContext, attempt_of, restart_attempt
from mpi_operator.controller.kubeflow.culprit import failed_pods
from mpi_operator.controller.kubeflow.failure_policy import (
    IGNORED_REASON,
    RESTARTING_FAILED_REASON,
    RESTARTING_REASON,
    Decision,
    decide,
    ignored_message,
    whole_restart,
)
from mpi_operator.controller.kubeflow.workers import worker_pods

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class Judgement:
    """The decision on this sync's failed pods, and the pods still to report on."""

    decision: Decision
    launcher_pods: list[Obj]
    workers: list[Obj]
    events: list[Event] = field(default_factory=list)


def restarting(job: MPIJob) -> str | None:
    """The reason of the job's Restarting condition while a restart is under way."""
    condition = get_condition(job.status, ConditionType.RESTARTING) if job.status else None
    if condition is None or condition.status != TRUE:
        return None
    return condition.reason or RESTARTING_REASON


def replaces_failed_only(job: MPIJob) -> bool:
    """A RestartFailed restart is under way: healthy workers of earlier attempts stay."""
    return restarting(job) == RESTARTING_FAILED_REASON


def _stale(job: MPIJob, pod: Obj, attempt: int, failed_only: bool) -> bool:
    if attempt_of(pod) >= attempt or not is_controlled_by(pod, job.uid):
        return False
    return not failed_only or pod_phase(pod) in ("Failed", "Succeeded")


async def clear_stale(ctx: SyncContext, job: MPIJob) -> bool:
    """Deletes the children of earlier attempts a restart replaces, and says whether any
    is left: every worker pod and the launcher Job (RestartJob), or only the workers
    that ended and the launcher Job (RestartFailed). Nothing once the job runs again
    (Running ends the Restarting condition): a RestartFailed restart's healthy workers
    carry an earlier attempt's label for good."""
    attempt = restart_attempt(job)
    if attempt == 0 or restarting(job) is None:
        return False
    failed_only = replaces_failed_only(job)
    stale = [p for p in worker_pods(ctx, job) if _stale(job, p, attempt, failed_only)]
    live = [p["metadata"]["name"] for p in stale if not is_terminating(p)]
    key = f"{job.namespace}/{job.name}"
    now = live[: deletes_now(ctx, key, len(live))]  # the rest are the next sync's
    deletes = [delete(ctx, PODS, job.namespace, name, None) for name in now]
    launcher = ctx.listers.jobs.get(job.namespace, launcher_name(job))
    stale_launcher = (
        launcher is not None
        and is_controlled_by(launcher, job.uid)
        and attempt_of(launcher) < attempt
    )
    if launcher is not None and stale_launcher and not is_terminating(launcher):
        # Foreground: the Job stays, and a new one waits, until its pods are gone.
        deletes.append(delete(ctx, JOBS, job.namespace, launcher_name(job), "Foreground"))
    await run_all(*deletes)
    if len(live) > len(now):
        ctx.requeue(key)
    return bool(stale) or stale_launcher


def judge(
    policy: FailurePolicy,
    job: MPIJob,
    launcher_pods: Sequence[Obj],
    workers: Sequence[Obj],
    deleted: frozenset[str] = frozenset(),
) -> Judgement:
    """Decides on the failed pods of the current attempt (pure). Pods whose uid is in
    ``deleted`` (an earlier sync deleted them, ignoring their failure) are left out."""
    attempt = restart_attempt(job)
    launcher_pods = [p for p in launcher_pods if p["metadata"].get("uid") not in deleted]
    workers = [w for w in workers if w["metadata"].get("uid") not in deleted]
    # A whole restart's earlier workers are gone before this runs; a RestartFailed
    # restart's healthy ones are still the job's, and judged.
    current = [w for w in workers if attempt_of(w) <= attempt]
    decision = decide(policy, failed_pods([*current, *launcher_pods]), attempt)
    if decision.action == FailurePolicyAction.RESTART_FAILED and job.spec.run_launcher_as_worker:
        # The launcher is a host of the ranks as well: mpirun's hosts change with it.
        decision = whole_restart(decision, "the launcher runs ranks (runLauncherAsWorker)")
    gone = {m.failure.uid for m in decision.ignored}
    events = [Event(WARNING, IGNORED_REASON, ignored_message(m)) for m in decision.ignored]
    return Judgement(
        decision,
        [p for p in launcher_pods if p["metadata"].get("uid") not in gone],
        [w for w in workers if w["metadata"].get("uid") not in gone],
        events,
    )


async def recreate_ignored(ctx: SyncContext, job: MPIJob, pods: Sequence[tuple[str, str]]) -> None:
    """Deletes the pods (name, uid) whose failure a rule ignores: the workers are
    recreated by the next sync, a launcher pod by the Job controller. The uids of the
    pods whose delete was sent are kept (deletion expectations of the job state)
    so that a sync before the cache shows the deletes does not judge, report and delete
    them again; a delete that failed keeps its pod in judgement for the retry."""
    if not pods:
        return
    key = f"{job.namespace}/{job.name}"
    results = await asyncio.gather(
        *(delete(ctx, PODS, job.namespace, name, None) for name, _ in pods),
        return_exceptions=True,
    )
    sent = (uid for (_, uid), result in zip(pods, results, strict=True) if result is None)
    ctx.state.deletions.expect(key, sent, ctx.clock.monotonic())
    error = first_error(results)
    if error is not None:
        raise error
