"""``runPolicy.ttlSecondsAfterFinishedPolicy: MPIJob`` (ours): the finished MPIJob is
deleted ``ttlSecondsAfterFinished`` after its ``completionTime``, and the garbage
collector deletes its children with it. Unset or ``Launcher``, the TTL keeps the
reference's meaning: only the launcher Job's own ``ttlSecondsAfterFinished``."""

from __future__ import annotations

from datetime import UTC, datetime

import structlog

from mpi_operator.api.v2beta1 import MPIJob, TTLPolicy
from mpi_operator.client import MPIJOBS, is_not_found
from mpi_operator.client.kubeapi import ApiError
from mpi_operator.controller.kubeflow.context import SyncContext

log = structlog.get_logger(__name__)


def seconds_left(job: MPIJob, now: datetime) -> float | None:
    """Until the finished job is due for deletion; None when it never is (pure)."""
    policy = job.spec.run_policy
    status = job.status
    if policy.ttl_seconds_after_finished_policy != TTLPolicy.MPIJOB:
        return None
    if policy.ttl_seconds_after_finished is None or status is None or not status.completion_time:
        return None
    try:
        done = datetime.strptime(status.completion_time, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    return done.timestamp() + policy.ttl_seconds_after_finished - now.timestamp()


async def collect(ctx: SyncContext, job: MPIJob) -> None:
    """Deletes the finished job when its TTL is over, or looks again when it will be."""
    left = seconds_left(job, ctx.clock.now())
    if left is None:
        return
    key = f"{job.namespace}/{job.name}"
    if left > 0:
        if ctx.requeue_after is not None:
            ctx.requeue_after(key, left)
        return
    log.info("deleting finished mpijob after its ttl", mpijob=key)
    try:
        await ctx.client.delete(
            MPIJOBS,
            job.namespace,
            job.name,
            propagation_policy="Background",
            preconditions={"uid": job.uid},
        )
    except ApiError as err:
        if not is_not_found(err):
            raise
