"""Worker pods: create the missing ones, remove the surplus, clean up at the end.

Missing pods are created concurrently in growing batches (1, 2, 4, ...) that
stop at the first error, at most 500 per sync, as the Job controller's slow start
does (:mod:`~mpi_operator.controller.slowstart`); the reference operator creates
them one call at a time, all in one sync. Pods to remove are deleted
all at once, as the Job controller deletes them; the reference again goes one
call at a time.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from mpi_operator.api.v2beta1 import (
    JOB_NAME_LABEL,
    JOB_ROLE_LABEL,
    OPERATOR_NAME,
    OPERATOR_NAME_LABEL,
    REPLICA_INDEX_LABEL,
    CleanPodPolicy,
    MPIJob,
    ReplicaType,
)
from mpi_operator.builders.common import WORKER, worker_name
from mpi_operator.builders.worker import new_worker
from mpi_operator.client import PODS, WARNING, is_already_exists, is_controlled_by, is_not_found
from mpi_operator.client.kubeapi import ApiError
from mpi_operator.controller.context import (
    ERR_RESOURCE_EXISTS,
    JOB_NAME_INDEX,
    MESSAGE_RESOURCE_EXISTS,
    SyncContext,
    SyncError,
    job_reference,
    with_operator_label,
    with_restart_attempt,
)
from mpi_operator.controller.parallel import run_all
from mpi_operator.controller.slowstart import create_slow_start
from mpi_operator.controller.status import is_terminating, pod_phase

Obj = dict[str, Any]

FAILED_REASON = "MPIJobFailed"
_NO_KIND = ""  # see children.py: the reference's message carries an empty Kind


def worker_pods(ctx: SyncContext, job: MPIJob) -> list[Obj]:
    """Cached pods labelled as this job's workers."""
    candidates = ctx.listers.pods.by_index(JOB_NAME_INDEX, f"{job.namespace}/{job.name}")
    # Plain comparisons: this runs over every worker on every sync of a big job.
    out = []
    for pod in candidates:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if (
            labels.get(JOB_ROLE_LABEL) == WORKER
            and labels.get(JOB_NAME_LABEL) == job.name
            and labels.get(OPERATOR_NAME_LABEL) == OPERATOR_NAME
        ):
            out.append(pod)
    return out


def _index(pod: Obj) -> int | None:
    try:
        return int(((pod.get("metadata") or {}).get("labels") or {})[REPLICA_INDEX_LABEL])
    except (KeyError, ValueError):
        return None


def _not_started(job: MPIJob, index: int) -> Obj:
    return {"metadata": {"name": worker_name(job, index), "namespace": job.namespace}, "status": {}}


def _resource_exists(ctx: SyncContext, shared: Obj, name: str) -> SyncError:
    message = MESSAGE_RESOURCE_EXISTS.format(name=name, kind=_NO_KIND)
    ctx.recorder.event(job_reference(shared), WARNING, ERR_RESOURCE_EXISTS, message)
    return SyncError(message)


async def _delete_pod(ctx: SyncContext, namespace: str, name: str) -> None:
    try:
        await ctx.client.delete(PODS, namespace, name)
    except ApiError as err:
        if not is_not_found(err):
            raise


async def _create_worker(ctx: SyncContext, shared: Obj, job: MPIJob, index: int) -> Obj:
    pod = new_worker(job, index, ctx.options.gang)
    try:
        pod = with_restart_attempt(pod, job)
        created: Obj = await ctx.client.create(PODS, job.namespace, with_operator_label(pod))
        return created
    except ApiError as err:
        if is_already_exists(err):
            # Invisible to our label-filtered cache: made by someone else, or
            # by an older operator without our label.
            existing: Obj = await ctx.client.get(PODS, job.namespace, pod["metadata"]["name"])
            if is_controlled_by(existing, job.uid):
                return existing
            raise _resource_exists(ctx, shared, pod["metadata"]["name"]) from None
        ctx.recorder.event(
            job_reference(shared),
            WARNING,
            FAILED_REASON,
            f"worker pod created failed: {err.message}",
        )
        raise


async def _create_missing(
    ctx: SyncContext, shared: Obj, job: MPIJob, missing: list[int]
) -> dict[int, Obj]:
    """Creates the first of ``missing`` (see slowstart); the rest waits for a requeue."""
    assert ctx.expectations is not None
    by_name = {worker_name(job, i): i for i in missing}
    created = await create_slow_start(
        ctx.expectations,
        f"{job.namespace}/{job.name}",
        [(name, partial(_create_worker, ctx, shared, job, i)) for name, i in by_name.items()],
        ctx.requeue,
    )
    return {by_name[name]: pod for name, pod in created.items()}


async def ensure_workers(ctx: SyncContext, shared: Obj, job: MPIJob) -> list[Obj]:
    spec = job.replica_spec(ReplicaType.WORKER)
    if spec is None:
        return []
    replicas = spec.replicas or 0
    pods = worker_pods(ctx, job)
    if len(pods) > replicas:
        # Deviation: only our own pods are removed on scale-down, all at once.
        await run_all(
            *(
                _delete_pod(ctx, job.namespace, pod["metadata"]["name"])
                for pod in pods
                if (index := _index(pod)) is not None
                and index >= replicas
                and is_controlled_by(pod, job.uid)
                and not is_terminating(pod)
            )
        )
    key = f"{job.namespace}/{job.name}"
    expectations = ctx.expectations
    assert expectations is not None
    in_flight = expectations.unobserved(key, (p["metadata"]["name"] for p in pods))
    existing: dict[int, Obj] = {}
    missing: list[int] = []
    for i in range(replicas):
        name = worker_name(job, i)
        found = ctx.listers.pods.get(job.namespace, name)
        if found is None and name in in_flight:
            # Created by an earlier sync, not yet in the cache: a pod that has not started.
            existing[i] = _not_started(job, i)
        elif found is None:
            missing.append(i)
        elif not is_controlled_by(found, job.uid):
            raise _resource_exists(ctx, shared, found["metadata"]["name"])
        else:
            existing[i] = found
    existing.update(await _create_missing(ctx, shared, job, missing))
    # Left for a later sync (slow start's cap): counted as pods that have not started.
    return [existing.get(i) or _not_started(job, i) for i in range(replicas)]


async def delete_workers(ctx: SyncContext, shared: Obj, job: MPIJob) -> None:
    """Removes worker pods as the cleanPodPolicy says (Running keeps finished pods)."""
    spec = job.replica_spec(ReplicaType.WORKER)
    if spec is None:
        return
    keep_finished = job.spec.run_policy.clean_pod_policy == CleanPodPolicy.RUNNING
    doomed: list[str] = []
    foreign: str | None = None
    for i in range(spec.replicas or 0):
        name = worker_name(job, i)
        pod = ctx.listers.pods.get(job.namespace, name)
        if pod is None:
            continue
        if not is_controlled_by(pod, job.uid):
            foreign = foreign or name
            continue
        if keep_finished and pod_phase(pod) not in ("Running", "Pending"):
            continue
        if is_terminating(pod):
            continue  # Deviation: the reference deletes a terminating pod again on every sync.
        doomed.append(name)
    # Deviation: the reference deletes one pod at a time and stops at the first pod
    # it does not own; we delete all of ours at once, then report that pod.
    await run_all(*(_delete_pod(ctx, job.namespace, name) for name in doomed))
    if foreign is not None:
        raise _resource_exists(ctx, shared, foreign)


def count_ready(pods: list[Obj]) -> int:
    ready = 0
    for pod in pods:
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Ready" and condition.get("status") == "True":
                ready += 1
                break
    return ready
