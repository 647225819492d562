"""The TTL after a Kubeflow MPIJob finished.

``runPolicy.ttlSecondsAfterFinishedPolicy: MPIJob`` (ours): the finished MPIJob is
deleted ``ttlSecondsAfterFinished`` after its ``completionTime``, and the garbage
collector deletes its children with it. Unset or ``Launcher``, the TTL keeps the
reference's meaning: only the launcher Job's own ``ttlSecondsAfterFinished``.

One case of the latter is ours to carry out: a launcher Job the operator suspended to
stop it (the job failed by its failure policy, its workers-ready timeout, an evicted
worker) never finishes, so the TTL-after-finished controller never deletes it; the
operator deletes it at the same time, counted from the MPIJob's ``completionTime``.
"""

from __future__ import annotations

from datetime import datetime

import structlog

from mpi_operator.api.v2beta1 import (
    MPIJob,
    TTLPolicy,
)
from mpi_operator.builders.kubeflow.common import launcher_name
from mpi_operator.client import JOBS, MPIJOBS, Resource, is_controlled_by, is_not_found
from mpi_operator.client.errors import ApiError
from mpi_operator.controller.core.objects import (
    is_job_finished,
    is_job_suspended,
    parse_time,
)
from mpi_operator.controller.kubeflow.context import (
    KubeflowSync,
)

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


async def collect_finished(sync: KubeflowSync) -> None:
    """Deletes the finished job (or the launcher Job it stopped) when its TTL is over,
    or looks again when it will be."""
    ctx, job = sync.ctx, sync.job
    if job.spec.run_policy.ttl_seconds_after_finished_policy == TTLPolicy.MPIJOB:
        await _delete_when_due(sync, MPIJOBS, job.name, {"uid": job.uid})
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
    await _delete_when_due(sync, JOBS, launcher_name(job), uid)


async def _delete_when_due(
    sync: KubeflowSync, resource: Resource, name: str, preconditions: dict[str, str]
) -> None:
    ctx, job = sync.ctx, sync.job
    left = _due_in(job, ctx.clock.now())
    if left is None:
        return
    key = sync.key
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
