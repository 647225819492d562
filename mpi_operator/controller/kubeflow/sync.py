"""The sync handler: one level-triggered pass over an MPIJob, safe to re-run anywhere.

:class:`MPIJobSyncer` reads the MPIJob from the cache and checks it; a valid one is
synced by one :class:`MPIJobSync`, the value of this sync (the context, the cached
MPIJob as its owner, the parsed job, its key), whose steps create or fix the children
that differ, decide the new status in memory (:func:`~.status.decide`) and hand back
the kit's finish, which writes it once. The status events (Created, Running,
Succeeded, ...) are emitted only once that write succeeded, so a failed write
followed by a retry does not report twice.
"""

from __future__ import annotations

from typing import ClassVar

import structlog

from mpi_operator.api.field_errors import InvalidObjectError, aggregate
from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.api.v2beta1 import (
    LauncherCreationPolicy,
    ManagedBy,
    MPIJob,
    limit_errors,
    parse,
    set_defaults,
    validate_defaulted,
)
from mpi_operator.builders.kubeflow.common import is_suspended
from mpi_operator.client import MPIJOBS, Resource
from mpi_operator.client.errors import ApiError
from mpi_operator.controller.core.context import Syncer, cached
from mpi_operator.controller.core.invalid import report_invalid
from mpi_operator.controller.core.job_sync import JobSync
from mpi_operator.controller.core.objects import is_job_finished, parse_time, pod_phase
from mpi_operator.controller.core.writes import Decision
from mpi_operator.controller.kubeflow.children import (
    create_launcher,
    delete_pod_group,
    ensure_environment,
    ensure_pod_group,
    get_launcher,
    stop_launcher,
    sync_suspension,
)
from mpi_operator.controller.kubeflow.conditions import (
    is_finished,
    is_succeeded,
)
from mpi_operator.controller.kubeflow.context import SyncContext, job_reference, owner_of
from mpi_operator.controller.kubeflow.elastic import below_min_seconds_left, is_elastic
from mpi_operator.controller.kubeflow.policy import replaces_failed_only
from mpi_operator.controller.kubeflow.ready_timeout import ready_seconds_left
from mpi_operator.controller.kubeflow.restart import clear_stale, recreate_ignored
from mpi_operator.controller.kubeflow.status import (
    Children,
    Clearing,
    Facts,
    Finished,
    Rejected,
    StatusUpdate,
    decide,
    next_status,
)
from mpi_operator.controller.kubeflow.ttl import collect_finished
from mpi_operator.controller.kubeflow.workers import (
    cached_workers,
    count_ready,
    delete_workers,
    ensure_workers,
    worker_pods,
)
from mpi_operator.controller.runner import Finish

log = structlog.get_logger(__name__)


INVALID = 422  # the API server's "Invalid": the same object is rejected every time


class _Rejected(Exception):
    """The API server rejected a pod template as Invalid (the message is its answer)."""


class MPIJobSyncer(Syncer[SyncContext]):
    async def sync(self, key: str) -> Finish | None:
        """Reads and checks the MPIJob; a valid one is synced by one
        :class:`MPIJobSync`, whose finish (the status write, then what the written
        decision asks of the children) is returned."""
        shared = self.ctx.state.own_writes.latest(key, cached(self.ctx.listers.mpijobs, key))
        if shared is None:
            log.debug("mpijob deleted", mpijob=key)
            return None
        job = self._parse(shared, key)
        if job is None:
            return None
        managed_by = job.spec.run_policy.managed_by
        if managed_by is not None and managed_by != ManagedBy.KUBEFLOW:
            log.debug(
                "skipping mpijob managed by another controller", mpijob=key, managed_by=managed_by
            )
            return None
        if metadata_of(shared).get("deletionTimestamp"):
            return None
        # Ours: the size limits (worker cap, ConfigMap size), before anything is written.
        domain = self.ctx.options.cluster_domain
        errors = self.ctx.state.checks.errors(
            key, shared, lambda: validate_defaulted(job) + limit_errors(job, domain)
        )
        if errors:
            report_invalid(self.ctx.recorder, job_reference(shared), key, aggregate(errors))
            return None
        return await MPIJobSync(self.ctx, owner_of(shared), job).run()

    def _parse(self, shared: Obj, key: str) -> MPIJob | None:
        try:
            return set_defaults(parse(shared))
        except InvalidObjectError as err:
            report_invalid(self.ctx.recorder, job_reference(shared), key, str(err))
            return None


class MPIJobSync(JobSync[SyncContext, MPIJob, StatusUpdate]):
    """One sync of a valid Kubeflow MPIJob: ensure the children, decide, then the kit's
    finish writes the decision and :meth:`act` follows it."""

    resource: ClassVar[Resource] = MPIJOBS

    async def run(self) -> Finish:
        """Ensure the children, decide the status (pure), then hand back the finish:
        write the status once, then act on the written decision."""
        facts = await self._ensure_children()
        decision = self._decide(facts)
        self.job.status = decision.update.status
        self._requeue_at_deadline(decision.update.requeue_after)
        return self.finishing(decision)

    def _decide(self, facts: Facts) -> Decision[StatusUpdate]:
        return decide(self.job, facts, self.ctx.clock.now(), self.owner.obj.get("status") or {})

    async def _ensure_children(self) -> Facts:
        """Creates or fixes the children as far as the job needs them now; returns what
        the status is decided from."""
        ctx, job = self.ctx, self.job
        status = job.status
        if status is not None and is_finished(status) and status.completion_time is not None:
            return Finished()
        # Pods an earlier sync deleted for the failure policy or as an elastic job's
        # lost workers are not judged again while the cache still shows them.
        judged = job.spec.run_policy.failure_policy is not None or is_elastic(job)
        restarting = await self._restart_under_way()
        if restarting is not None:
            return restarting
        launcher, bystanders = self._launcher()
        if launcher is None or not is_job_finished(launcher):
            await ensure_environment(self)
            ending = self._ending_as_cached(launcher, judged)
            if ending is not None:
                return ending
        try:
            launcher, workers = await self._create_children(launcher)
        except _Rejected as rejected:
            return Rejected(str(rejected))
        if launcher is not None:
            launcher = await self._sync_launcher_suspension(launcher, workers)
        if is_suspended(job):
            await self._clean_up_workers()
        launcher_pods = self._launcher_pods(launcher)
        if launcher is not None:
            ctx.metrics.job_info.labels(launcher["metadata"]["name"], job.namespace).set(1)
        deleted: frozenset[str] = frozenset()
        if judged:
            deleted = ctx.state.deletions.pending(self.key, ctx.clock.monotonic())
        return Children(launcher, launcher_pods, workers, deleted, bystanders)

    async def _restart_under_way(self) -> Facts | None:
        """A failure policy's restart still clearing the earlier attempt's children
        (:func:`~.restart.clear_stale`): what the status is decided from meanwhile, or
        None once nothing of it is left."""
        job = self.job
        if job.spec.run_policy.failure_policy is None:
            return None
        stale = await clear_stale(self)
        if stale.failures:
            # A worker the restart kept failed: judged before anything new is made.
            pending = self.ctx.state.deletions.pending(self.key, self.ctx.clock.monotonic())
            return Clearing(stale.failures, pending)
        if stale.launcher and not stale.workers and replaces_failed_only(job):
            # A RestartFailed restart whose failed workers are gone: their replacements
            # start while the old launcher Job goes; the new one waits for it (and, with
            # no gang scheduling, for every worker to be Ready).
            return await self._replace_failed_workers()
        if stale:
            # A restart is under way: nothing new until the last attempt's children are gone.
            return Clearing()
        return None

    def _launcher(self) -> tuple[Obj | None, list[Obj]]:
        """The launcher Job, and the workers that are bystanders of its end: once it
        finished, they are judged with it."""
        launcher = get_launcher(self)
        if launcher is None or not is_job_finished(launcher):
            return launcher, []
        # Deviation: the reference judges no worker once its launcher finished; a
        # worker that failed first (an OOM that made mpirun exit) is still the culprit.
        return launcher, [w for w in worker_pods(self) if self.owner.controls(w)]

    def _ending_as_cached(self, launcher: Obj | None, judged: bool) -> Children | None:
        """The children as the cache shows them, when they already end the job: a
        sync whose decision is Failed creates nothing (no missing worker, no launcher)
        before that status is written. Looked at only when a pod failed, the workers'
        Ready timeout is over or an elastic job's time below minReplicas is, the only
        ways a job ends before its launcher Job does: a sync of a running job pays one
        scan of the phases, not a second decision."""
        ctx, job = self.ctx, self.job
        if is_suspended(job):
            return None
        launcher_pods = self._launcher_pods(launcher)
        pods = (*worker_pods(self), *launcher_pods)
        now = ctx.clock.now()
        deadlines = (ready_seconds_left(job, now), below_min_seconds_left(job, now))
        over = any(left is not None and left <= 0 for left in deadlines)
        if not over and not any(pod_phase(p) == "Failed" for p in pods):
            return None
        workers = cached_workers(self)
        deleted: frozenset[str] = frozenset()
        if judged:
            deleted = ctx.state.deletions.pending(self.key, ctx.clock.monotonic())
        facts = Children(launcher, launcher_pods, workers, deleted)
        return facts if is_finished(next_status(job, facts, ctx.clock.now()).status) else None

    def _launcher_pods(self, launcher: Obj | None) -> list[Obj]:
        if launcher is None:
            return []
        uid = str(launcher["metadata"].get("uid") or "")
        return self.ctx.listers.pods.by_controller_uid(uid, self.job.namespace)

    async def _replace_failed_workers(self) -> Clearing | Rejected:
        """Creates the workers a RestartFailed restart replaces (and nothing else) while
        the old launcher Job is still going."""
        try:
            if not is_suspended(self.job):
                await self._ensure_pod_group()
                await ensure_workers(self)
        except ApiError as err:
            if err.status != INVALID:
                raise
            return Rejected(err.message)
        return Clearing()

    async def _create_children(self, launcher: Obj | None) -> tuple[Obj | None, list[Obj]]:
        """PodGroup, workers and launcher, as far as the job needs them now; returns
        the launcher and the workers. Raises :class:`_Rejected` when the API server
        rejects a worker pod or the launcher Job as Invalid."""
        ctx, job = self.ctx, self.job
        workers: list[Obj] = []
        if launcher is not None and is_job_finished(launcher):
            return launcher, workers
        try:
            if not is_suspended(job):
                await self._ensure_pod_group()
                workers = await ensure_workers(self)
            at_startup = job.spec.launcher_creation_policy == LauncherCreationPolicy.AT_STARTUP
            # A RestartFailed restart's mpirun needs every host: it waits for them all.
            # Not under gang scheduling: the group's quorum counts the launcher (workers
            # + 1 by default), so held back it would keep the replacements unplaced for
            # good; it is made as at the job's start, placed with them.
            held = replaces_failed_only(job) and ctx.options.gang is None
            at_startup = at_startup and not held
            if launcher is None and (at_startup or count_ready(workers) == len(workers)):
                launcher = await create_launcher(self)
        except ApiError as err:
            if err.status != INVALID:
                raise
            raise _Rejected(err.message) from err
        return launcher, workers

    async def _ensure_pod_group(self) -> None:
        """The gang's PodGroup, before the pods it places (with ``--gang-scheduling``)."""
        if self.ctx.options.gang is not None:
            await ensure_pod_group(self)

    async def act(self, update: StatusUpdate) -> None:
        """The child writes a written decision asks for: its metrics counted, ignored
        pods deleted, the launcher stopped, the workers cleaned up, an earlier attempt
        cleared, a finished job's TTL. A job whose written status says finished
        (``update.write`` False) only finishes its clean-up."""
        self._count(update)
        await recreate_ignored(self, update.ignored)
        if update.stop_launcher:
            await stop_launcher(self)
        if update.clean_up:
            await self._clean_up_workers()
        if update.restart:
            await clear_stale(self)
        if is_finished(update.status):
            await collect_finished(self)

    async def _sync_launcher_suspension(self, launcher: Obj, workers: list[Obj]) -> Obj:
        # Deviation (upstream #615, a bug fix): with WaitForWorkersReady a resumed
        # launcher waits for its workers to be Ready again, as at creation.
        job = self.job
        waiting = job.spec.launcher_creation_policy == LauncherCreationPolicy.WAIT_FOR_WORKERS_READY
        hold = waiting and count_ready(workers) < len(workers)
        return await sync_suspension(self, launcher, hold_resume=hold)

    def _requeue_at_deadline(self, seconds: float | None) -> None:
        if seconds is not None and seconds > 0:
            self.ctx.requeue_after(self.key, seconds)

    async def _clean_up_workers(self) -> None:
        await delete_workers(self)
        await delete_pod_group(self)

    def _count(self, update: StatusUpdate) -> None:
        """The metrics of a written decision."""
        metrics = self.ctx.metrics
        if update.created:
            metrics.jobs_created.inc()
        if update.succeeded:
            metrics.jobs_successful.inc()
        if update.failed:
            metrics.jobs_failed.inc()
        if update.succeeded or update.failed:
            self._observe_duration()

    def _observe_duration(self) -> None:
        status = self.job.status
        if status is None or not status.start_time or not status.completion_time:
            return
        start, end = parse_time(status.start_time), parse_time(status.completion_time)
        if start is None or end is None:
            return
        result = "succeeded" if is_succeeded(status) else "failed"
        seconds = max(end - start, 0.0)
        self.ctx.metrics.job_duration.labels(result).observe(seconds)
