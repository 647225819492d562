"""Worker pods, all their writes: create the missing ones, remove the surplus, clean
up at the end, clear an earlier attempt after a restart, delete ignored failures, and
delete a finished job whose TTL is over.

Missing pods are created concurrently in growing batches (8, 16, 32, ...) that stop
at the first error, at most 500 per sync, as the Job controller's slow start does
(:mod:`~mpi_operator.controller.core.pods`); the reference operator creates them one
call at a time. Pods to remove are deleted all at once, at most 500 in one sync, and a
finished job's workers in one delete of their collection
(:mod:`~mpi_operator.controller.core.pods`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial

import structlog

from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.api.v2beta1 import (
    REPLICA_INDEX_LABEL,
    CleanPodPolicy,
    ConditionType,
    MPIJob,
    ReplicaType,
    TTLPolicy,
)
from mpi_operator.builders.kubeflow.common import launcher_name, worker_name, worker_names
from mpi_operator.builders.kubeflow.worker import new_worker
from mpi_operator.client import JOBS, MPIJOBS, PODS, Resource, is_controlled_by, is_not_found
from mpi_operator.client.errors import ApiError
from mpi_operator.controller.core.objects import (
    get_condition,
    is_job_finished,
    is_job_suspended,
    is_terminating,
    name_of,
    parse_time,
    pod_phase,
    uid_of,
)
from mpi_operator.controller.core.owner import Owner, delete, first_error, resource_exists
from mpi_operator.controller.core.pods import (
    PodCollection,
    create_pods,
    delete_pod_collection,
    delete_pods,
    deletes_now,
)
from mpi_operator.controller.kubeflow.conditions import FAILED_REASON
from mpi_operator.controller.kubeflow.context import (
    NO_KIND,
    WORKERS_INDEX,
    SyncContext,
    attempt_of,
    restart_attempt,
    with_restart_attempt,
    worker_selector,
)
from mpi_operator.controller.kubeflow.policy import failed_pod, replaces_failed_only, restarting

#: What cleanPodPolicy Running deletes: pods that have not finished (Pending, Running).
UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown"
WORKER_FAILED = "worker pod created failed: "


def worker_pods(ctx: SyncContext, job: MPIJob) -> list[Obj]:
    """Cached pods labelled as this job's workers by this operator."""
    return ctx.listers.pods.by_index(WORKERS_INDEX, f"{job.namespace}/{job.name}")


def _index(pod: Obj) -> int | None:
    try:
        return int((metadata_of(pod).get("labels") or {})[REPLICA_INDEX_LABEL])
    except (KeyError, ValueError):
        return None


def _not_started(job: MPIJob, index: int) -> Obj:
    return {"metadata": {"name": worker_name(job, index), "namespace": job.namespace}, "status": {}}


async def _create_missing(
    ctx: SyncContext, owner: Owner, job: MPIJob, missing: list[int]
) -> dict[int, Obj]:
    """Creates the first of ``missing`` (see slowstart); the rest waits for a requeue."""
    by_name = {worker_name(job, i): i for i in missing}

    def build(index: int) -> Obj:
        return with_restart_attempt(new_worker(job, index, ctx.options.gang), job)

    pods = [(name, partial(build, i)) for name, i in by_name.items()]
    failed = (FAILED_REASON, WORKER_FAILED)
    # Nothing of a new worker but its name and phase is read before the cache has it.
    created = await create_pods(ctx, owner, pods, NO_KIND, failed, answer=False)
    return {by_name[name]: pod for name, pod in created.items()}


def cached_workers(ctx: SyncContext, owner: Owner, job: MPIJob) -> list[Obj]:
    """The workers as the cache shows them, one per replica, without a write: a
    missing one (or one not ours) counts as a pod that has not started."""
    spec = job.replica_spec(ReplicaType.WORKER)
    replicas = (spec.replicas or 0) if spec is not None else 0
    ours = {name_of(p): p for p in worker_pods(ctx, job) if owner.controls(p)}
    names = worker_names(job.name, replicas)
    return [ours.get(name) or _not_started(job, i) for i, name in enumerate(names)]


async def ensure_workers(ctx: SyncContext, owner: Owner, job: MPIJob) -> list[Obj]:
    spec = job.replica_spec(ReplicaType.WORKER)
    if spec is None:
        return []
    replicas = spec.replicas or 0
    pods = worker_pods(ctx, job)
    if len(pods) > replicas:
        # Deviation: only our own pods are removed on scale-down, all at once.
        surplus = [
            pod["metadata"]["name"]
            for pod in pods
            if (index := _index(pod)) is not None
            and index >= replicas
            and owner.controls(pod)
            and not is_terminating(pod)
        ]
        uids = {name_of(p): uid_of(p) for p in pods}
        await delete_pods(ctx, owner.key, job.namespace, surplus, uids=uids)
    in_flight = ctx.in_flight(owner.key, (p["metadata"]["name"] for p in pods))
    # One set lookup per worker instead of reading each pod's owner references.
    controlled = ctx.listers.pods.keys_controlled_by(owner.uid)
    namespace, existing, missing = job.namespace, dict[int, Obj](), list[int]()
    labelled = {pod["metadata"]["name"]: pod for pod in pods}
    for i, name in enumerate(worker_names(job.name, replicas)):
        # A pod named like a worker but not labelled as one is found by name all the same.
        found = labelled.get(name) or ctx.listers.pods.get(namespace, name)
        if found is None and name in in_flight:
            # Created by an earlier sync, not yet in the cache: a pod that has not started.
            existing[i] = _not_started(job, i)
        elif found is None:
            missing.append(i)
        elif f"{namespace}/{name}" not in controlled:
            raise resource_exists(ctx, owner, found["metadata"]["name"], NO_KIND)
        else:
            existing[i] = found
    existing.update(await _create_missing(ctx, owner, job, missing))
    # Left for a later sync (slow start's cap): counted as pods that have not started.
    return [existing.get(i) or _not_started(job, i) for i in range(replicas)]


async def delete_workers(ctx: SyncContext, owner: Owner, job: MPIJob) -> None:
    """Removes worker pods as the cleanPodPolicy says (Running keeps finished pods)."""
    spec = job.replica_spec(ReplicaType.WORKER)
    if spec is None:
        return
    keep_finished = job.spec.run_policy.clean_pod_policy == CleanPodPolicy.RUNNING
    doomed: list[str] = []
    uids: dict[str, str] = {}
    foreign: str | None = None
    for name in worker_names(job.name, spec.replicas or 0):
        pod = ctx.listers.pods.get(job.namespace, name)
        if pod is None:
            continue
        if not owner.controls(pod):
            foreign = foreign or name
            continue
        if keep_finished and pod_phase(pod) not in ("Running", "Pending"):
            continue
        if is_terminating(pod):
            continue  # Deviation: the reference deletes a terminating pod again on every sync.
        doomed.append(name)
        uids[name] = uid_of(pod)
    if foreign is None:
        selected = PodCollection(
            job.namespace, worker_selector(job.name), UNFINISHED_PODS if keep_finished else None
        )
        members = partial(worker_pods, ctx, job)
        await delete_pod_collection(ctx, owner, selected, members, doomed)
        return
    # Deviation: the reference deletes one pod at a time and stops at the first pod
    # it does not own; we delete all of ours at once, then report that pod.
    await delete_pods(ctx, owner.key, job.namespace, doomed, uids=uids)
    raise resource_exists(ctx, owner, foreign, NO_KIND)


def count_ready(pods: list[Obj]) -> int:
    """Ready workers; a terminating one (deleted on suspension, say) does not count."""
    ready = 0
    for pod in pods:
        if is_terminating(pod):
            continue
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Ready" and condition.get("status") == "True":
                ready += 1
                break
    return ready


# ------------------------ restart ------------------------
#
# The failure policy at work (ours): restart the gang, fail the job, or recreate a pod.
#
# A restart is written to the status first (``restartCount`` up by one, a Restarting
# condition, ``lastFailure``); the children of earlier attempts are then deleted on this
# sync and on every later one until they are gone: every worker pod and the launcher Job
# (its pods with it) for RestartJob; for RestartFailed only the workers that ended and
# the launcher Job, while the healthy workers keep running. Only then are new ones
# created, labelled with the attempt; after a RestartFailed the new launcher waits for
# every worker to be Ready, whatever ``launcherCreationPolicy`` says. The Service,
# ConfigMap, Secret and PodGroup stay, and ``runPolicy.suspend`` is not touched, so Kueue
# keeps the job admitted. Pods a restart replaced are never judged again.


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


async def clear_stale(ctx: SyncContext, job: MPIJob) -> Stale:
    """Deletes the children of earlier attempts a restart replaces, and says what is
    left: every worker pod and the launcher Job (RestartJob), or only the workers
    that ended and the launcher Job (RestartFailed). Nothing once the job runs again
    (Running ends the Restarting condition): a RestartFailed restart's healthy workers
    carry an earlier attempt's label for good."""
    attempt = restart_attempt(job)
    if attempt == 0 or restarting(job) is None:
        return Stale()
    failed_only = replaces_failed_only(job)
    stale = [p for p in worker_pods(ctx, job) if _stale(job, p, attempt, failed_only)]
    key = f"{job.namespace}/{job.name}"
    # A pod whose delete an earlier sync sent is not sent again while the cache has yet
    # to show it (a sync for another child's event can come first: a 404 each time).
    sent = ctx.state.deletions.pending(key, ctx.clock.monotonic())
    failures: list[Obj] = []
    if failed_only:
        # A healthy worker the restart kept that failed since: the policy's to judge.
        decided = _decided_at(job)
        failures = [p for p in stale if _failed_since(p, decided)]
        stale = [p for p in stale if not _failed_since(p, decided)]
        failures = [p for p in failures if not is_terminating(p) and uid_of(p) not in sent]
    live = [p for p in stale if not is_terminating(p) and uid_of(p) not in sent]
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
    await _delete_expected(ctx, job, [(name_of(p), uid_of(p)) for p in now], *also)
    if len(live) > len(now):
        ctx.requeue(key)
    return Stale(workers=bool(stale), launcher=stale_launcher, failures=tuple(failures))


async def recreate_ignored(ctx: SyncContext, job: MPIJob, pods: Sequence[tuple[str, str]]) -> None:
    """Deletes the pods (name, uid) whose failure a rule ignores: the workers are
    recreated by the next sync, a launcher pod by the Job controller. The uids of the
    pods whose delete was sent are kept (deletion expectations of the job state)
    so that a sync before the cache shows the deletes does not judge, report and delete
    them again; a delete that failed keeps its pod in judgement for the retry."""
    if not pods:
        return
    key = f"{job.namespace}/{job.name}"
    now = pods[: deletes_now(ctx, key, len(pods))]  # capped as every delete path is
    await _delete_expected(ctx, job, now)
    if len(pods) > len(now):
        # The rest are judged again by the next sync, once these deletes are expected.
        ctx.requeue(key)


async def _delete_expected(
    ctx: SyncContext, job: MPIJob, pods: Sequence[tuple[str, str]], *also: Awaitable[None]
) -> None:
    """Deletes the job's pods (name, uid) and awaits ``also`` alongside; the uids of
    the pods whose delete was sent become deletion expectations, then the first
    error, if any, is raised."""
    results = await asyncio.gather(
        *(delete(ctx, PODS, job.namespace, name, None, uid=uid) for name, uid in pods),
        *also,
        return_exceptions=True,
    )
    pod_results = results[: len(pods)]  # ``also`` comes last
    sent = (uid for (_, uid), result in zip(pods, pod_results, strict=True) if result is None)
    ctx.state.deletions.expect(f"{job.namespace}/{job.name}", sent, ctx.clock.monotonic())
    error = first_error(results)
    if error is not None:
        raise error


# ------------------------ ttl ------------------------
#
# ``runPolicy.ttlSecondsAfterFinishedPolicy: MPIJob`` (ours): the finished MPIJob is
# deleted ``ttlSecondsAfterFinished`` after its ``completionTime``, and the garbage
# collector deletes its children with it. Unset or ``Launcher``, the TTL keeps the
# reference's meaning: only the launcher Job's own ``ttlSecondsAfterFinished``.
#
# One case of the latter is ours to carry out: a launcher Job the operator suspended to
# stop it (the job failed by its failure policy, its workers-ready timeout, an evicted
# worker) never finishes, so the TTL-after-finished controller never deletes it; the
# operator deletes it at the same time, counted from the MPIJob's ``completionTime``.


log = structlog.get_logger(__name__)


def _due_in(job: MPIJob, now: datetime) -> float | None:
    """Seconds until ``completionTime`` + ``ttlSecondsAfterFinished``; None without both."""
    ttl = job.spec.run_policy.ttl_seconds_after_finished
    status = job.status
    if ttl is None or status is None or not status.completion_time:
        return None
    done = parse_time(status.completion_time)
    if done is None:
        return None
    return done + ttl - now.timestamp()


async def collect_finished(ctx: SyncContext, job: MPIJob) -> None:
    """Deletes the finished job (or the launcher Job it stopped) when its TTL is over,
    or looks again when it will be."""
    if job.spec.run_policy.ttl_seconds_after_finished_policy == TTLPolicy.MPIJOB:
        await _delete_when_due(ctx, job, MPIJOBS, job.name, {"uid": job.uid})
        return
    launcher = ctx.listers.jobs.get(job.namespace, launcher_name(job))
    if (
        launcher is None
        or not is_controlled_by(launcher, job.uid)
        or is_job_finished(launcher)  # the TTL-after-finished controller's to delete
        or not is_job_suspended(launcher)
    ):
        return
    uid = {"uid": str(launcher["metadata"].get("uid") or "")}
    await _delete_when_due(ctx, job, JOBS, launcher_name(job), uid)


async def _delete_when_due(
    ctx: SyncContext, job: MPIJob, resource: Resource, name: str, preconditions: dict[str, str]
) -> None:
    left = _due_in(job, ctx.clock.now())
    if left is None:
        return
    key = f"{job.namespace}/{job.name}"
    if left > 0:
        if ctx.requeue_after is not None:
            ctx.requeue_after(key, left)
        return
    log.info("deleting after the ttl", mpijob=key, kind=resource.plural, name=name)
    try:
        await ctx.client.delete(
            resource,
            job.namespace,
            name,
            propagation_policy="Background",
            preconditions=preconditions,
        )
    except ApiError as err:
        if not is_not_found(err):
            raise
