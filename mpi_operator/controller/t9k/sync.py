"""The T9k sync handler: one level-triggered pass over a T9k MPIJob.

Reads the job and its pods from the caches; keeps the Service, hostfile
ConfigMap and SSH Secret (also while paused, so the job keeps its identity);
deletes every pod while paused; otherwise creates missing pods in slow-start
batches, at most 500 a sync (the PodGroup first, when the t9k scheduler is
used); decides the status in memory (:func:`~.status.decide`; a write that only
reports a fan-out's progress is spaced out), which the kit's finish writes once;
applies ``cleanUpWorkers`` once the job has finished and only after the status that
says so is written, so that a refused write or a crash leaves the pods that prove the
ending. A valid job is synced by one :class:`T9kJobSync`, the value of this sync
(the context, the cached MPIJob as its owner, the parsed job, its key). The pods a pause
or ``cleanUpWorkers`` deletes go in one delete of their collection when they may
(:mod:`~mpi_operator.controller.core.pods`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import ClassVar

import structlog

from mpi_operator.api.field_errors import InvalidObjectError, aggregate
from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.api.t9k import (
    REPLICA_TYPE_LABEL,
    CleanUpPolicy,
    MPIJob,
    Phase,
    ReplicaType,
    parse,
    set_defaults,
    validate_defaulted,
)
from mpi_operator.builders.t9k.common import launcher_name
from mpi_operator.builders.t9k.pods import (
    new_launcher_pod,
    new_worker_pod,
    pod_run_mode,
    run_mode,
)
from mpi_operator.client import Resource
from mpi_operator.controller.core.context import Syncer, cached
from mpi_operator.controller.core.invalid import report_invalid
from mpi_operator.controller.core.job_sync import JobSync
from mpi_operator.controller.core.objects import (
    format_time,
    is_terminating,
    labels_of,
    pod_phase,
    uid_of,
)
from mpi_operator.controller.core.pods import delete_pods
from mpi_operator.controller.runner import Finish
from mpi_operator.controller.t9k import children
from mpi_operator.controller.t9k.context import (
    T9K_MPIJOBS,
    SyncContext,
    job_reference,
    owner_of,
)
from mpi_operator.controller.t9k.status import (
    TERMINAL_PHASES,
    StatusUpdate,
    decide,
    pods_finished,
    slots,
    was_paused,
)

log = structlog.get_logger(__name__)


_UNFINISHED_POD_PHASES = ("Pending", "Running", "Unknown", "")


class T9kMPIJobSyncer(Syncer[SyncContext]):
    async def sync(self, key: str) -> Finish | None:
        """Reads and checks the MPIJob; a valid one is synced by one
        :class:`T9kJobSync`, whose finish is returned."""
        shared = self.ctx.state.own_writes.latest(key, cached(self.ctx.listers.mpijobs, key))
        if shared is None or metadata_of(shared).get("deletionTimestamp"):
            return None
        try:
            job = set_defaults(parse(shared))
        except InvalidObjectError as err:
            report_invalid(self.ctx.recorder, job_reference(shared), key, str(err))
            return None
        errors = self.ctx.state.checks.errors(key, shared, lambda: validate_defaulted(job))
        if errors:
            report_invalid(self.ctx.recorder, job_reference(shared), key, aggregate(errors))
            return None
        return await T9kJobSync(self.ctx, owner_of(shared), job).run()


class T9kJobSync(JobSync[SyncContext, MPIJob, StatusUpdate]):
    """One sync of a valid T9k MPIJob: keep the children, create or delete pods, decide;
    the kit's finish writes the decision and :meth:`act` follows it."""

    resource: ClassVar[Resource] = T9K_MPIJOBS

    async def run(self) -> Finish:
        """Ensure the children, decide the status (pure), then hand back the finish:
        write the status once, then act on the written decision."""
        ctx, owner, job = self.ctx, self.owner, self.job
        pods = children.job_pods(self)
        await self._ensure_children(pods)
        written = owner.obj.get("status") or {}
        decision = decide(job, pods, ctx.clock.now(), written, pods_created=bool(pods))
        return self.finishing(decision)

    async def _ensure_children(self, pods: dict[str, Obj]) -> None:
        """The Service, ConfigMap and Secret, then the pods as the job wants them now
        (``pods``, the cached ones by name, follows what is created and deleted)."""
        job = self.job
        finished = job.status is not None and job.status.phase in TERMINAL_PHASES
        # The pods may have ended the job already (a status write that failed after the
        # clean-up, a pause asked as it ended): nothing is made or paused anew then.
        if finished or pods_finished(job, pods):
            return
        await children.ensure_environment(self)
        if job.paused:
            live = [name for name, pod in pods.items() if not is_terminating(pod)]
            await children.delete_pods_together(self, live)
        else:
            await self._delete_surplus_pods(pods)
            pods.update(await self._create_missing_pods(pods))

    async def act(self, update: StatusUpdate) -> None:
        """Decide, write, then act: the pods that show the job ended are deleted only
        once the status that says so is written. A write that fails leaves them, and
        the next sync decides the same; one that finds the status written finishes the
        clean-up."""
        if not update.finished:
            return
        # The cache as it is now, not as the sync read it: the delete events of an
        # earlier finish's deletes may have come in during the write.
        now = children.job_pods(self)
        await self._clean_up_workers(now)
        await self._stop_waiting_launcher(now, update)

    async def _create_missing_pods(self, pods: dict[str, Obj]) -> dict[str, Obj]:
        """Slow-start creation of the pods not in the cache nor in flight, as the
        Kubeflow workers' (:mod:`~mpi_operator.controller.core.pods`), after the job's
        PodGroup."""
        in_flight = self.ctx.in_flight(self.key, pods)
        missing = [(t, i, n) for t, i, n in slots(self.job) if n not in pods and n not in in_flight]
        if not missing:
            return {}
        await children.ensure_pod_group(self)
        return await children.create_pods_of(self, self._builds(missing))

    def _builds(
        self, missing: list[tuple[ReplicaType, int, str]]
    ) -> list[tuple[str, Callable[[], Obj]]]:
        """The missing pods, each with the call that builds it when its turn comes."""
        ctx, job = self.ctx, self.job
        resumed = was_paused(job)
        workload_api = ctx.options.workload_api

        def build(replica_type: ReplicaType, index: int) -> Obj:
            if replica_type is ReplicaType.LAUNCHER:
                image = ctx.options.init_image
                return new_launcher_pod(
                    job, resumed=resumed, init_image=image, workload_api=workload_api
                )
            return new_worker_pod(job, index, resumed=resumed, workload_api=workload_api)

        return [(name, partial(build, t, i)) for t, i, name in missing]

    async def _delete_surplus_pods(self, pods: dict[str, Obj]) -> None:
        """Removes workers beyond ``spec.worker.replicas`` (after a scale-down), and
        pods built for another run mode (debug switched on or off): they come back
        in the right mode once gone."""
        job = self.job
        wanted = {name for _, _, name in slots(job)}
        surplus = [name for name in pods if name not in wanted]
        mode = run_mode(job, was_paused(job))
        stale = [
            name
            for name, pod in pods.items()
            if name in wanted and not is_terminating(pod) and pod_run_mode(pod) != mode
        ]
        # A terminating pod is not deleted again (500 deletes at most go in one sync).
        going = [name for name in surplus if not is_terminating(pods[name])]
        uids = {name: uid_of(pods[name]) for name in [*stale, *going]}
        await delete_pods(self.ctx, self.key, job.namespace, [*stale, *going], uids=uids)
        for name in surplus:
            del pods[name]
        deleted_at = format_time(self.ctx.clock.now())
        for name in stale:
            # Deleted (or left to the next sync past 500): an exit of theirs in the
            # other mode does not end the job.
            meta = {**pods[name]["metadata"], "deletionTimestamp": deleted_at}
            pods[name] = {**pods[name], "metadata": meta}

    async def _stop_waiting_launcher(self, pods: dict[str, Obj], update: StatusUpdate) -> None:
        """A job that failed while its launcher had yet to start (waiting in its init
        container for a worker that failed, say) deletes it unless nothing is cleaned
        up: it would wait for the workers forever. A running launcher stays: mpirun
        ends on its own, and its log tells what went wrong."""
        job = self.job
        name = launcher_name(job)
        launcher = pods.get(name)
        if (
            update.status.phase != Phase.FAILED.value
            or job.spec.run_policy.clean_up_policy() == CleanUpPolicy.NONE
            or launcher is None
            or is_terminating(launcher)
            or pod_phase(launcher) != "Pending"
        ):
            return
        await delete_pods(self.ctx, self.key, job.namespace, [name], uids={name: uid_of(launcher)})

    async def _clean_up_workers(self, pods: dict[str, Obj]) -> None:
        policy = self.job.spec.run_policy.clean_up_policy()
        if policy == CleanUpPolicy.NONE:
            return
        doomed = [
            name
            for name, pod in pods.items()
            if labels_of(pod).get(REPLICA_TYPE_LABEL) == ReplicaType.WORKER.value
            and not is_terminating(pod)
            and (policy == CleanUpPolicy.ALL or pod_phase(pod) in _UNFINISHED_POD_PHASES)
        ]
        unfinished = policy != CleanUpPolicy.ALL
        await children.delete_pods_together(self, doomed, ReplicaType.WORKER, unfinished=unfinished)
