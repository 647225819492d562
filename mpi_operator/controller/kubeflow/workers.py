"""Worker pods: create the missing ones, remove the surplus, clean up at the end.

Missing pods are created concurrently in growing batches (8, 16, 32, ...) that stop
at the first error, at most 500 per sync, as the Job controller's slow start does
(:mod:`~mpi_operator.controller.core.pods`); the reference operator creates them one
call at a time. Pods to remove are deleted all at once, at most 500 in one sync, and a
finished job's workers in one delete of their collection
(:mod:`~mpi_operator.controller.core.pod_collection`).
"""

from __future__ import annotations

from functools import partial

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import (
    REPLICA_INDEX_LABEL,
    CleanPodPolicy,
    MPIJob,
    ReplicaType,
)
from mpi_operator.builders.kubeflow.common import worker_name, worker_names
from mpi_operator.builders.kubeflow.worker import new_worker
from mpi_operator.controller.core.objects import (
    is_terminating,
    labels_of,
    name_of,
    pod_phase,
    uid_of,
)
from mpi_operator.controller.core.owner import resource_exists
from mpi_operator.controller.core.pod_collection import PodCollection, delete_pod_collection
from mpi_operator.controller.core.pods import create_pods, delete_pods
from mpi_operator.controller.kubeflow.conditions import FAILED_REASON
from mpi_operator.controller.kubeflow.context import (
    NO_KIND,
    WORKERS_INDEX,
    KubeflowSync,
    with_restart_attempt,
    worker_selector,
)

#: What cleanPodPolicy Running deletes: pods that have not finished (Pending, Running).
UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown"
WORKER_FAILED = "worker pod created failed: "


def worker_pods(sync: KubeflowSync) -> list[Obj]:
    """Cached pods labelled as this job's workers by this operator."""
    ctx = sync.ctx
    return ctx.listers.pods.by_index(WORKERS_INDEX, sync.key)


def replica_index(pod: Obj) -> int | None:
    """The worker's replica index label; None when it has none."""
    try:
        return int(labels_of(pod)[REPLICA_INDEX_LABEL])
    except (KeyError, ValueError):
        return None


def _not_started(job: MPIJob, index: int) -> Obj:
    return {"metadata": {"name": worker_name(job, index), "namespace": job.namespace}, "status": {}}


async def _create_missing(sync: KubeflowSync, missing: list[int]) -> dict[int, Obj]:
    """Creates the first of ``missing`` (slow start); the rest waits for a requeue."""
    ctx, owner, job = sync.ctx, sync.owner, sync.job
    by_name = {worker_name(job, i): i for i in missing}

    def build(index: int) -> Obj:
        return with_restart_attempt(new_worker(job, index, ctx.options.gang), job)

    pods = [(name, partial(build, i)) for name, i in by_name.items()]
    failed = (FAILED_REASON, WORKER_FAILED)
    # Nothing of a new worker but its name and phase is read before the cache has it.
    created = await create_pods(ctx, owner, pods, NO_KIND, failed, answer=False)
    return {by_name[name]: pod for name, pod in created.items()}


def cached_workers(sync: KubeflowSync) -> list[Obj]:
    """The workers as the cache shows them, one per replica, without a write: a
    missing one (or one not ours) counts as a pod that has not started."""
    owner, job = sync.owner, sync.job
    spec = job.replica_spec(ReplicaType.WORKER)
    replicas = (spec.replicas or 0) if spec is not None else 0
    ours = {name_of(p): p for p in worker_pods(sync) if owner.controls(p)}
    names = worker_names(job.name, replicas)
    return [ours.get(name) or _not_started(job, i) for i, name in enumerate(names)]


async def ensure_workers(sync: KubeflowSync) -> list[Obj]:
    ctx, owner, job = sync.ctx, sync.owner, sync.job
    spec = job.replica_spec(ReplicaType.WORKER)
    if spec is None:
        return []
    replicas = spec.replicas or 0
    pods = worker_pods(sync)
    if len(pods) > replicas:
        # Deviation: only our own pods are removed on scale-down, all at once.
        surplus = [
            pod["metadata"]["name"]
            for pod in pods
            if (index := replica_index(pod)) is not None
            and index >= replicas
            and owner.controls(pod)
            and not is_terminating(pod)
        ]
        uids = {name_of(p): uid_of(p) for p in pods}
        await delete_pods(ctx, sync.key, job.namespace, surplus, uids=uids)
    in_flight = ctx.in_flight(sync.key, (p["metadata"]["name"] for p in pods))
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
    existing.update(await _create_missing(sync, missing))
    # Left for a later sync (slow start's cap): counted as pods that have not started.
    return [existing.get(i) or _not_started(job, i) for i in range(replicas)]


async def delete_workers(sync: KubeflowSync) -> None:
    """Removes worker pods as the cleanPodPolicy says (Running keeps finished pods)."""
    ctx, owner, job = sync.ctx, sync.owner, sync.job
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
        members = partial(worker_pods, sync)
        await delete_pod_collection(ctx, owner, selected, members, doomed)
        return
    # Deviation: the reference deletes one pod at a time and stops at the first pod
    # it does not own; we delete all of ours at once, then report that pod.
    await delete_pods(ctx, sync.key, job.namespace, doomed, uids=uids)
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
