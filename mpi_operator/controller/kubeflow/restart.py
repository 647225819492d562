"""A restart by the failure policy: the earlier attempts' children it replaces, and the
failed pods a rule ignores.

The failure policy at work (ours): restart the gang, fail the job, or recreate a pod.

A restart is written to the status first (``restartCount`` up by one, a Restarting
condition, ``lastFailure``); the children of earlier attempts are then deleted on this
sync and on every later one until they are gone: every worker pod and the launcher Job
(its pods with it) for RestartJob; for RestartFailed only the workers that ended and
the launcher Job, while the healthy workers keep running. Only then are new ones
created, labelled with the attempt; after a RestartFailed the new launcher waits for
every worker to be Ready, whatever ``launcherCreationPolicy`` says (under gang
scheduling it follows ``launcherCreationPolicy`` as at the job's start). The Service,
ConfigMap, Secret and PodGroup stay, and ``runPolicy.suspend`` is not touched, so Kueue
keeps the job admitted. Pods a restart replaced are never judged again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass

import structlog

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import (
    ConditionType,
    MPIJob,
)
from mpi_operator.builders.kubeflow.common import launcher_name
from mpi_operator.client import JOBS, PODS, is_controlled_by
from mpi_operator.controller.core.objects import (
    get_condition,
    is_terminating,
    name_of,
    parse_time,
    pod_phase,
    uid_of,
)
from mpi_operator.controller.core.owner import delete
from mpi_operator.controller.core.parallel import first_error
from mpi_operator.controller.core.pods import (
    deletes_now,
)
from mpi_operator.controller.kubeflow.context import (
    KubeflowSync,
    attempt_of,
    restart_attempt,
)
from mpi_operator.controller.kubeflow.culprit import failed_pod
from mpi_operator.controller.kubeflow.policy import replaces_failed_only, restarting
from mpi_operator.controller.kubeflow.workers import worker_pods

log = structlog.get_logger(__name__)


def _stale(job: MPIJob, pod: Obj, attempt: int, failed_only: bool) -> bool:
    if attempt_of(pod) >= attempt or not is_controlled_by(pod, job.uid):
        return False
    return not failed_only or pod_phase(pod) in ("Failed", "Succeeded")


def _decided_at(job: MPIJob) -> float | None:
    """When the restart under way was decided: its Restarting condition's last update
    (a restart decided again while one is under way moves it)."""
    condition = get_condition(job.status, ConditionType.RESTARTING) if job.status else None
    if condition is None:
        return None
    return parse_time(condition.last_update_time or condition.last_transition_time)


def _failed_since(pod: Obj, decided: float | None) -> bool:
    """A worker that failed after the restart was decided: a new failure, not one the
    restart replaces. A failure of unknown time, or of the decision's own second
    (stamps have second precision), counts as one the restart replaces."""
    if decided is None or pod_phase(pod) != "Failed":
        return False
    failure = failed_pod(pod)
    ended = parse_time(failure.finished_at) if failure is not None else None
    return ended is not None and ended > decided


@dataclass(frozen=True, slots=True)
class Stale:
    """What is left of the earlier attempts' children a restart replaces, and
    (``failures``) the workers a RestartFailed restart kept that failed since it was
    decided: those are judged by the failure policy, not cleared."""

    workers: bool = False
    launcher: bool = False
    failures: tuple[Obj, ...] = ()

    def __bool__(self) -> bool:
        return self.workers or self.launcher


async def clear_stale(sync: KubeflowSync) -> Stale:
    """Deletes the children of earlier attempts a restart replaces, and says what is
    left: every worker pod and the launcher Job (RestartJob), or only the workers
    that ended and the launcher Job (RestartFailed). Nothing once the job runs again
    (Running ends the Restarting condition): a RestartFailed restart's healthy workers
    carry an earlier attempt's label for good."""
    ctx, job = sync.ctx, sync.job
    attempt = restart_attempt(job)
    if attempt == 0 or restarting(job) is None:
        return Stale()
    failed_only = replaces_failed_only(job)
    stale = [p for p in worker_pods(sync) if _stale(job, p, attempt, failed_only)]
    key = sync.key
    # A pod whose delete an earlier sync sent is not sent again while the cache has yet
    # to show it (a sync for another child's event can come first: a 404 each time).
    sent = ctx.state.deletions.pending(key, ctx.clock.monotonic())
    failures: list[Obj] = []
    if failed_only:
        # A healthy worker the restart kept that failed since: the policy's to judge.
        decided = _decided_at(job)
        since = {uid_of(p) for p in stale if _failed_since(p, decided)}
        failures = [p for p in stale if uid_of(p) in since]
        stale = [p for p in stale if uid_of(p) not in since]
    live = [p for p in stale if not is_terminating(p) and uid_of(p) not in sent]
    failures = [p for p in failures if not is_terminating(p) and uid_of(p) not in sent]
    now = live[: deletes_now(ctx, key, len(live))]  # the rest are the next sync's
    launcher = ctx.listers.jobs.get(job.namespace, launcher_name(job))
    stale_launcher = (
        launcher is not None
        and is_controlled_by(launcher, job.uid)
        and attempt_of(launcher) < attempt
    )
    also: list[Awaitable[None]] = []
    if launcher is not None and stale_launcher and not is_terminating(launcher):
        # Foreground: the Job stays, and a new one waits, until its pods are gone.
        name = launcher_name(job)
        also.append(delete(ctx, JOBS, job.namespace, name, "Foreground", uid=uid_of(launcher)))
    await _delete_expected(sync, [(name_of(p), uid_of(p)) for p in now], *also)
    if len(live) > len(now):
        ctx.requeue(key)
    return Stale(workers=bool(stale), launcher=stale_launcher, failures=tuple(failures))


async def recreate_ignored(sync: KubeflowSync, pods: Sequence[tuple[str, str]]) -> None:
    """Deletes the pods (name, uid) whose failure a rule ignores: the workers are
    recreated by the next sync, a launcher pod by the Job controller. The uids of the
    pods whose delete was sent are kept (deletion expectations of the job state)
    so that a sync before the cache shows the deletes does not judge, report and delete
    them again; a delete that failed keeps its pod in judgement for the retry."""
    ctx = sync.ctx
    if not pods:
        return
    key = sync.key
    now = pods[: deletes_now(ctx, key, len(pods))]  # capped as every delete path is
    await _delete_expected(sync, now)
    if len(pods) > len(now):
        # The rest are judged again by the next sync, once these deletes are expected.
        ctx.requeue(key)


async def _delete_expected(
    sync: KubeflowSync, pods: Sequence[tuple[str, str]], *also: Awaitable[None]
) -> None:
    """Deletes the job's pods (name, uid) and awaits ``also`` alongside; the uids of
    the pods whose delete was sent become deletion expectations, then the first
    error, if any, is raised."""
    ctx, job = sync.ctx, sync.job
    results = await asyncio.gather(
        *(delete(ctx, PODS, job.namespace, name, None, uid=uid) for name, uid in pods),
        *also,
        return_exceptions=True,
    )
    pod_results = results[: len(pods)]  # ``also`` comes last
    sent = (uid for (_, uid), result in zip(pods, pod_results, strict=True) if result is None)
    ctx.state.deletions.expect(sync.key, sent, ctx.clock.monotonic())
    error = first_error(results)
    if error is not None:
        raise error
