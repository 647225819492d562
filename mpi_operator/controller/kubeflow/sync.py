"""The sync handler: one level-triggered pass over an MPIJob, safe to re-run anywhere.

It reads the MPIJob and its children from the caches, creates or fixes what
differs, computes the new status in memory and writes it once. The status
events (Created, Running, Succeeded, ...) are emitted only once that write
succeeded, so a failed write followed by a retry does not report twice.
"""

from __future__ import annotations

import time
from datetime import datetime

import structlog

from mpi_operator.api.field_errors import InvalidObjectError, aggregate
from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import (
    CleanPodPolicy,
    ConditionType,
    FailurePolicyAction,
    JobStatus,
    LauncherCreationPolicy,
    ManagedBy,
    MPIJob,
    ReplicaType,
    limit_errors,
    parse,
    set_defaults,
    validate,
)
from mpi_operator.builders.kubeflow.common import is_suspended
from mpi_operator.builders.kubeflow.worker import worker_replicas
from mpi_operator.client import MPIJOBS, WARNING
from mpi_operator.client.events import truncate_message
from mpi_operator.client.kubeapi import ApiError
from mpi_operator.controller.core.context import Syncer, cached
from mpi_operator.controller.core.invalid import report_invalid
from mpi_operator.controller.core.objects import format_time, is_job_finished, is_job_succeeded
from mpi_operator.controller.core.owner import Owner
from mpi_operator.controller.core.parallel import run_all
from mpi_operator.controller.core.progress import SPACED_FROM_WORKERS
from mpi_operator.controller.core.writes import Event, dump_status, write_status
from mpi_operator.controller.kubeflow import children, ready_timeout, ttl
from mpi_operator.controller.kubeflow import launcher as launchers
from mpi_operator.controller.kubeflow import restart as restarts
from mpi_operator.controller.kubeflow import workers as worker_pods
from mpi_operator.controller.kubeflow.conditions import (
    CREATED_REASON,
    TRUE,
    has_true_condition,
    is_finished,
    is_succeeded,
    refresh_state,
    update_conditions,
)
from mpi_operator.controller.kubeflow.context import SyncContext, job_reference, owner_of
from mpi_operator.controller.kubeflow.failure_policy import Decision
from mpi_operator.controller.kubeflow.status import StatusOutcome, replica_status, update_status

log = structlog.get_logger(__name__)


INVALID_POD_TEMPLATE = "InvalidPodTemplate"
INVALID = 422  # the API server's "Invalid": the same object is rejected every time


class MPIJobSyncer(Syncer[SyncContext]):
    async def sync(self, key: str) -> None:
        shared = cached(self.ctx.listers.mpijobs, key)
        if shared is None:
            log.debug("mpijob deleted", mpijob=key)
            self.ctx.progress.forget(key)
            return
        job = self._parse(shared, key)
        if job is None:
            return
        managed_by = job.spec.run_policy.managed_by
        if managed_by is not None and managed_by != ManagedBy.KUBEFLOW:
            log.debug(
                "skipping mpijob managed by another controller", mpijob=key, managed_by=managed_by
            )
            return
        if (shared.get("metadata") or {}).get("deletionTimestamp"):
            return
        # Ours: the size limits (worker cap, ConfigMap size), before anything is written.
        errors = validate(job) + limit_errors(job, self.ctx.options.cluster_domain)
        if errors:
            report_invalid(self.ctx.recorder, job_reference(shared), key, aggregate(errors))
            return
        await self._sync_valid(owner_of(shared), job)

    def _parse(self, shared: Obj, key: str) -> MPIJob | None:
        try:
            return set_defaults(parse(shared))
        except InvalidObjectError as err:
            report_invalid(self.ctx.recorder, job_reference(shared), key, str(err))
            return None

    async def _sync_valid(self, owner: Owner, job: MPIJob) -> None:
        ctx = self.ctx
        now = ctx.clock.now()
        pending: list[Event] = []
        created = False
        if job.status is None or not job.status.conditions:
            message = f"MPIJob {job.namespace}/{job.name} is created."
            status = job.status = job.status or JobStatus()
            update_conditions(status, ConditionType.CREATED, TRUE, CREATED_REASON, message, now)
            pending.append(Event("Normal", CREATED_REASON, message))
            created = True
        status = job.status
        assert status is not None

        if is_finished(status) and status.completion_time is not None:
            await launchers.stop_launcher(ctx, job)
            if self._cleans_up(job):
                await self._clean_up_workers(owner, job)
                await self._write_status(owner, job, StatusOutcome(events=pending), created)
            else:
                await ttl.collect(ctx, job)
            return

        if status.start_time is None and not is_suspended(job):
            status.start_time = format_time(now)
        policy = job.spec.run_policy.failure_policy
        if policy is not None and await restarts.clear_stale(ctx, job):
            # A restart is under way: nothing new until the last attempt's children are gone.
            await self._write_status(owner, job, StatusOutcome(events=pending), created)
            return
        await self._sync_children(owner, job, pending, created)

    async def _sync_children(
        self, owner: Owner, job: MPIJob, pending: list[Event], created: bool
    ) -> None:
        ctx = self.ctx
        now = ctx.clock.now()
        launcher = launchers.get_launcher(ctx, owner, job)
        found = await self._create_children(owner, job, launcher, pending, created)
        if found is None:
            return
        launcher, workers = found
        if launcher is not None:
            launcher = await self._sync_launcher_suspension(owner, job, launcher, workers)
        if is_suspended(job):
            await self._clean_up_workers(owner, job)

        launcher_pods: list[Obj] = []
        if launcher is not None:
            uid = str(launcher["metadata"].get("uid") or "")
            launcher_pods = ctx.listers.pods.by_controller_uid(uid, job.namespace)
            ctx.metrics.job_info.labels(launcher["metadata"]["name"], job.namespace).set(1)
        not_ready = ready_timeout.not_ready_message(job, workers, now)
        if not_ready is not None:
            await self._fail(owner, job, ready_timeout.REASON, not_ready, pending, created)
            return
        self._requeue_at_deadline(job, ready_timeout.seconds_left(job, now))
        await self._judge_and_write(
            owner, job, launcher, launcher_pods, workers, pending, created, now
        )

    async def _create_children(
        self, owner: Owner, job: MPIJob, launcher: Obj | None, pending: list[Event], created: bool
    ) -> tuple[Obj | None, list[Obj]] | None:
        """Service, ConfigMap, Secret, PodGroup, workers and launcher, as far as the job
        needs them now; returns the launcher and the workers, or None when the API
        server rejected a pod template (the job has failed)."""
        ctx = self.ctx
        workers: list[Obj] = []
        if launcher is not None and is_job_finished(launcher):
            return launcher, workers
        # Deviation: the reference creates these three one after another.
        await run_all(
            children.ensure_service(ctx, owner, job),
            children.ensure_config_map(ctx, owner, job),
            children.ensure_ssh_secret(ctx, owner, job),
        )
        try:
            if not is_suspended(job):
                if ctx.options.gang is not None:
                    await children.ensure_pod_group(ctx, owner, job)
                workers = await worker_pods.ensure_workers(ctx, owner, job)
            if launcher is None and (
                job.spec.launcher_creation_policy == LauncherCreationPolicy.AT_STARTUP
                or worker_pods.count_ready(workers) == len(workers)
            ):
                launcher = await launchers.create_launcher(ctx, owner, job)
        except ApiError as err:
            if err.status != INVALID:
                raise
            await self._fail_invalid(owner, job, err, pending, created)
            return None
        return launcher, workers

    async def _judge_and_write(
        self,
        owner: Owner,
        job: MPIJob,
        launcher: Obj | None,
        launcher_pods: list[Obj],
        workers: list[Obj],
        pending: list[Event],
        created: bool,
        now: datetime,
    ) -> None:
        """The failure policy's judgement, then the status from the children, written once."""
        status = job.status
        assert status is not None
        policy = job.spec.run_policy.failure_policy
        succeeded = launcher is not None and is_job_succeeded(launcher)
        if policy is not None and not is_suspended(job) and not succeeded:
            # A launcher that succeeded after a retry leaves failed pods: not a failure.
            judgement = restarts.judge(policy, job, launcher_pods, workers)
            await restarts.recreate_ignored(self.ctx, job, judgement)
            pending += judgement.events
            launcher_pods, workers = judgement.launcher_pods, judgement.workers
            if judgement.decision.action is not None:
                await self._act(owner, job, judgement.decision, pending, created)
                return
        outcome = update_status(job, launcher, launcher_pods, workers, now)
        outcome.events[:0] = pending
        if is_finished(status):
            # Deviation: the reference cleans up on the sync after the one that finished
            # the job, and writes the status again; we stop the launcher and clean up
            # before the one write, so nothing runs on a finished job.
            await launchers.stop_launcher(self.ctx, job)
            if self._cleans_up(job):
                await self._clean_up_workers(owner, job)
        await self._write_status(owner, job, outcome, created)

    async def _act(
        self, owner: Owner, job: MPIJob, decision: Decision, pending: list[Event], created: bool
    ) -> None:
        """The failure policy restarts the job (the old children go after the status
        write, so a failed write leaves them for the retry) or fails it."""
        status = job.status
        assert status is not None
        pending += restarts.mark(status, decision, self.ctx.clock.now())
        failed = decision.action == FailurePolicyAction.FAIL_JOB
        if failed:
            await launchers.stop_launcher(self.ctx, job)
            if self._cleans_up(job):
                await self._clean_up_workers(owner, job)
        await self._write_status(owner, job, StatusOutcome(events=pending, failed=failed), created)
        if not failed:
            await restarts.clear_stale(self.ctx, job)

    async def _sync_launcher_suspension(
        self, owner: Owner, job: MPIJob, launcher: Obj, workers: list[Obj]
    ) -> Obj:
        # Deviation (upstream #615, a bug fix): with WaitForWorkersReady a resumed
        # launcher waits for its workers to be Ready again, as at creation.
        waiting = job.spec.launcher_creation_policy == LauncherCreationPolicy.WAIT_FOR_WORKERS_READY
        hold = waiting and worker_pods.count_ready(workers) < len(workers)
        return await launchers.sync_suspension(self.ctx, owner, job, launcher, hold_resume=hold)

    def _requeue_at_deadline(self, job: MPIJob, seconds: float | None) -> None:
        if seconds is not None and seconds > 0 and self.ctx.requeue_after is not None:
            self.ctx.requeue_after(f"{job.namespace}/{job.name}", seconds)

    async def _fail_invalid(
        self, owner: Owner, job: MPIJob, err: ApiError, pending: list[Event], created: bool
    ) -> None:
        """A worker pod or the launcher Job that the API server rejects as Invalid."""
        # Deviation from the reference (it retries forever): fail fast, no requeue.
        message = (
            f"MPIJob {job.namespace}/{job.name} has failed: "
            f"the API server rejected its pod template: {err.message}"
        )
        await self._fail(owner, job, INVALID_POD_TEMPLATE, message, pending, created)

    async def _fail(
        self,
        owner: Owner,
        job: MPIJob,
        reason: str,
        message: str,
        pending: list[Event],
        created: bool,
    ) -> None:
        """Fails the job: launcher stopped and cleanPodPolicy applied before the write."""
        status = job.status
        assert status is not None
        now = self.ctx.clock.now()
        message = truncate_message(message)
        if status.completion_time is None:
            status.completion_time = format_time(now)
        if update_conditions(status, ConditionType.FAILED, TRUE, reason, message, now):
            pending.append(Event(WARNING, reason, message))
        await launchers.stop_launcher(self.ctx, job)
        if self._cleans_up(job):
            await self._clean_up_workers(owner, job)
        await self._write_status(owner, job, StatusOutcome(events=pending, failed=True), created)

    @staticmethod
    def _cleans_up(job: MPIJob) -> bool:
        policy = job.spec.run_policy.clean_pod_policy
        return policy in (CleanPodPolicy.ALL, CleanPodPolicy.RUNNING)

    async def _clean_up_workers(self, owner: Owner, job: MPIJob) -> None:
        await worker_pods.delete_workers(self.ctx, owner, job)
        status = job.status
        assert status is not None
        replica_status(status, ReplicaType.WORKER)
        await children.delete_pod_group(self.ctx, owner, job)

    async def _write_status(
        self, owner: Owner, job: MPIJob, outcome: StatusOutcome, created: bool
    ) -> None:
        assert job.status is not None
        refresh_state(job.status)
        new_status = dump_status(job.status)
        old_status = owner.obj.get("status") or {}
        changed = new_status != old_status
        progress = (
            changed
            and not outcome.events
            and worker_replicas(job) >= SPACED_FROM_WORKERS
            and _fanning_out(job.status)
            and _counts_only(old_status, new_status)
        )
        if progress and self.ctx.progress.defer("status", owner.key, self.ctx.requeue_after):
            return
        await write_status(self.ctx, owner, MPIJOBS, new_status, outcome.events)
        if progress:
            self.ctx.progress.wrote("status", owner.key)
        elif changed:
            self.ctx.progress.reset(owner.key)
        metrics = self.ctx.metrics
        if created:
            metrics.jobs_created.inc()
        if outcome.succeeded:
            metrics.jobs_successful.inc()
        if outcome.failed:
            metrics.jobs_failed.inc()
        if outcome.succeeded or outcome.failed:
            self._observe_duration(job)
        if is_finished(job.status):
            await ttl.collect(self.ctx, job)

    def _observe_duration(self, job: MPIJob) -> None:
        status = job.status
        if status is None or not status.start_time or not status.completion_time:
            return
        try:
            start = time.strptime(status.start_time, "%Y-%m-%dT%H:%M:%SZ")
            end = time.strptime(status.completion_time, "%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            return
        result = "succeeded" if is_succeeded(status) else "failed"
        seconds = max(time.mktime(end) - time.mktime(start), 0.0)
        self.ctx.metrics.job_duration.labels(result).observe(seconds)


def _counts_only(old: Obj, new: Obj) -> bool:
    """Only more replicas became active (progress): the conditions, times, the other
    counts and the rest are as written."""
    if not old.get("conditions") or _without(old, "replicaStatuses") != _without(
        new, "replicaStatuses"
    ):
        return False
    before, after = old.get("replicaStatuses") or {}, new.get("replicaStatuses") or {}
    if before.keys() != after.keys():
        return False
    return all(
        _without(was, "active") == _without(after[kind], "active")
        and int(after[kind].get("active") or 0) >= int(was.get("active") or 0)
        for kind, was in before.items()
    )


def _without(obj: Obj, key: str) -> Obj:
    return {k: v for k, v in obj.items() if k != key}


def _fanning_out(status: JobStatus) -> bool:
    """Started but not yet Running, nor finished: the phase whose progress is spaced."""
    return not is_finished(status) and not has_true_condition(status, ConditionType.RUNNING)
