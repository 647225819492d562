"""Get-or-create of a T9k MPIJob's children and the deletions pause and clean-up need."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from functools import partial

from mpi_operator.api.object_model import Obj
from mpi_operator.api.t9k import (
    JOB_NAME_LABEL,
    OPERATOR_LABEL,
    OPERATOR_NAME,
    REPLICA_TYPE_LABEL,
    ReplicaType,
)
from mpi_operator.builders.t9k.common import config_name, secret_name
from mpi_operator.builders.t9k.config import new_config_map
from mpi_operator.builders.t9k.podgroup import (
    new_pod_group,
    new_workload_pod_group,
    uses_workload_api,
)
from mpi_operator.builders.t9k.secret import new_ssh_secret
from mpi_operator.builders.t9k.service import new_service
from mpi_operator.client import CONFIGMAPS, SECRETS, SERVICES
from mpi_operator.client.errors import ApiError
from mpi_operator.client.kubeapi import POD_GROUPS_WORKLOAD_API
from mpi_operator.controller.core.crds import GANG_SCHEDULING_FLAG, raise_if_not_served
from mpi_operator.controller.core.owner import (
    Child,
    create_or_adopt,
    create_unless_cached,
    ensure,
    ensure_controlled,
)
from mpi_operator.controller.core.pod_collection import PodCollection, delete_pod_collection
from mpi_operator.controller.core.pods import create_pods
from mpi_operator.controller.t9k.context import T9K_POD_GROUPS, T9kSync

POD_FAILED = ("FailedCreatePod", "pod {name}: ")
#: What a job uses the PodGroup for, as a missing CRD's message says.
POD_GROUP_NEEDED_FOR = "spec.scheduler.t9kScheduler"
#: What ``cleanUpWorkers: unfinished`` deletes: pods that have not finished.
UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"


async def ensure_environment(sync: T9kSync) -> None:
    """The Service, the ConfigMap (hostfile) and the SSH Secret the pods need, ensured
    through one core call (:func:`~.core.owner.ensure`)."""
    ctx, owner, job = sync.ctx, sync.owner, sync.job
    config = new_config_map(job)
    await ensure(
        ctx,
        owner,
        [
            Child(
                SERVICES,
                ctx.listers.services.get(job.namespace, job.name),
                partial(new_service, job),
                SERVICES.kind,
            ),
            Child(
                CONFIGMAPS,
                ctx.listers.configmaps.get(job.namespace, config_name(job)),
                lambda: config,
                CONFIGMAPS.kind,
                partial(_fix_config_map, sync, config),
            ),
            Child(
                SECRETS,
                ctx.listers.secrets.get(job.namespace, secret_name(job)),
                # Key generation is CPU-bound; keep it off the event loop.
                partial(asyncio.to_thread, new_ssh_secret, job, ctx.keygen),
                SECRETS.kind,
            ),
        ],
    )


async def _fix_config_map(sync: T9kSync, desired: Obj, current: Obj) -> None:
    if (current.get("data") or {}) != desired["data"]:
        updated = {**current, "data": desired["data"]}
        name = config_name(sync.job)
        await sync.ctx.client.replace(CONFIGMAPS, sync.job.namespace, name, updated)


async def ensure_pod_group(sync: T9kSync) -> None:
    """The job's PodGroup, if it has one, before its pods are made (called only when
    pods are about to be created): the t9k scheduler's, or the Workload API's."""
    ctx, job = sync.ctx, sync.job
    if job.t9k_scheduler is not None:
        await _ensure_t9k_pod_group(sync)
    elif uses_workload_api(job, ctx.options.workload_api):
        await _ensure_workload_pod_group(sync)


async def _ensure_t9k_pod_group(sync: T9kSync) -> None:
    """Creates the t9k scheduler's PodGroup, or brings its spec up to date. Read from
    its cache, started on first use."""
    ctx, owner, job = sync.ctx, sync.owner, sync.job
    desired = new_pod_group(job)
    assert desired is not None
    try:
        lister = await ctx.listers.pod_groups.lister(ctx.client, job.namespace)
        current = lister.get(job.namespace, job.name)
        if current is None:
            await create_or_adopt(ctx, owner, T9K_POD_GROUPS, desired, T9K_POD_GROUPS.kind)
            return
        ensure_controlled(ctx, owner, current, T9K_POD_GROUPS.kind)
        if current.get("spec") != desired["spec"]:
            updated = {**current, "spec": desired["spec"]}
            await ctx.client.replace(T9K_POD_GROUPS, job.namespace, job.name, updated)
    except ApiError as err:
        raise_if_not_served(err, T9K_POD_GROUPS, POD_GROUP_NEEDED_FOR)
        raise


async def _ensure_workload_pod_group(sync: T9kSync) -> None:
    """Creates the Workload API's PodGroup unless its cache (every PodGroup of that API:
    not filtered by label) has it. It is set at creation and never updated, as the
    Kubeflow jobs' of that API."""
    ctx, owner, job = sync.ctx, sync.owner, sync.job
    cache = ctx.listers.gang_pod_groups
    assert cache is not None
    desired = new_workload_pod_group(job)
    try:
        lister = await cache.lister(ctx.client, job.namespace)
        await create_unless_cached(ctx, owner, POD_GROUPS_WORKLOAD_API, lister, desired)
    except ApiError as err:
        raise_if_not_served(err, POD_GROUPS_WORKLOAD_API, GANG_SCHEDULING_FLAG)
        raise


def job_pods(sync: T9kSync) -> dict[str, Obj]:
    """This job's pods in the cache, by name."""
    ctx, owner = sync.ctx, sync.owner
    return {
        str(p["metadata"]["name"]): p
        for p in ctx.listers.pods.list(_pod_labels(owner.name), owner.namespace)
        if owner.controls(p)
    }


async def delete_pods_together(
    sync: T9kSync,
    names: Sequence[str],
    replica_type: ReplicaType | None = None,
    *,
    unfinished: bool = False,
) -> None:
    """Deletes ``names``, the job's pods (of ``replica_type`` only, if given; of those
    that have not finished only, if ``unfinished``) that are to go, in one delete of
    their collection when it may be used (:mod:`~mpi_operator.controller.core.pod_collection`)."""
    ctx, owner = sync.ctx, sync.owner
    labels = _pod_labels(owner.name)
    if replica_type is not None:
        labels[REPLICA_TYPE_LABEL] = replica_type.value
    selector = ",".join(f"{key}={value}" for key, value in labels.items())
    collection = PodCollection(owner.namespace, selector, UNFINISHED_PODS if unfinished else None)
    members = partial(ctx.listers.pods.list, selector, owner.namespace)
    await delete_pod_collection(ctx, owner, collection, members, names)


def _pod_labels(job_name: str) -> dict[str, str]:
    return {OPERATOR_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job_name}


async def create_pods_of(
    sync: T9kSync, pods: Sequence[tuple[str, Callable[[], Obj]]]
) -> dict[str, Obj]:
    ctx, owner = sync.ctx, sync.owner
    # The answer is read: the status names each pod's uid.
    return await create_pods(ctx, owner, pods, "Pod", POD_FAILED)
