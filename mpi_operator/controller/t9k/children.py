"""Get-or-create of a T9k MPIJob's children and the deletions pause and clean-up need."""

from __future__ import annotations

import asyncio

from mpi_operator.api.object_model import Obj
from mpi_operator.api.t9k import JOB_NAME_LABEL, OPERATOR_LABEL, OPERATOR_NAME, MPIJob
from mpi_operator.builders.t9k.common import config_name, secret_name
from mpi_operator.builders.t9k.config import new_config_map
from mpi_operator.builders.t9k.podgroup import new_pod_group
from mpi_operator.builders.t9k.secret import new_ssh_secret
from mpi_operator.builders.t9k.service import new_service
from mpi_operator.client import (
    CONFIGMAPS,
    PODS,
    SECRETS,
    SERVICES,
    WARNING,
    ApiError,
    Resource,
    is_already_exists,
    is_controlled_by,
    is_not_found,
)
from mpi_operator.client.errors import is_not_served
from mpi_operator.controller.missing_crd import raise_if_not_served
from mpi_operator.controller.t9k.context import (
    ERR_RESOURCE_EXISTS,
    MESSAGE_RESOURCE_EXISTS,
    T9K_POD_GROUPS,
    SyncContext,
    SyncError,
    has_operator_label,
    job_reference,
)


def not_ours(ctx: SyncContext, shared: Obj, name: str, kind: str) -> SyncError:
    message = MESSAGE_RESOURCE_EXISTS.format(name=name, kind=kind)
    ctx.recorder.event(job_reference(shared), WARNING, ERR_RESOURCE_EXISTS, message)
    return SyncError(message)


async def create_or_adopt(
    ctx: SyncContext, shared: Obj, job: MPIJob, resource: Resource, desired: Obj
) -> Obj:
    """Creates ``desired``; when it exists already, uses it if this job controls it."""
    try:
        created: Obj = await ctx.client.create(resource, job.namespace, desired)
        return created
    except ApiError as err:
        if not is_already_exists(err):
            raise
    name = desired["metadata"]["name"]
    existing = await ctx.client.get(resource, job.namespace, name)
    if not is_controlled_by(existing, job.uid):
        raise not_ours(ctx, shared, name, resource.kind)
    if not has_operator_label(existing):
        patch = {"metadata": {"labels": desired["metadata"]["labels"]}}
        existing = await ctx.client.patch(resource, job.namespace, name, patch)
    return existing


async def ensure_service(ctx: SyncContext, shared: Obj, job: MPIJob) -> None:
    current = ctx.listers.services.get(job.namespace, job.name)
    if current is None:
        await create_or_adopt(ctx, shared, job, SERVICES, new_service(job))
    elif not is_controlled_by(current, job.uid):
        raise not_ours(ctx, shared, job.name, "Service")


async def ensure_config_map(ctx: SyncContext, shared: Obj, job: MPIJob) -> None:
    desired = new_config_map(job)
    current = ctx.listers.configmaps.get(job.namespace, config_name(job))
    if current is None:
        await create_or_adopt(ctx, shared, job, CONFIGMAPS, desired)
        return
    if not is_controlled_by(current, job.uid):
        raise not_ours(ctx, shared, config_name(job), "ConfigMap")
    if (current.get("data") or {}) != desired["data"]:
        updated = {**current, "data": desired["data"]}
        await ctx.client.replace(CONFIGMAPS, job.namespace, config_name(job), updated)


async def ensure_ssh_secret(ctx: SyncContext, shared: Obj, job: MPIJob) -> None:
    current = ctx.listers.secrets.get(job.namespace, secret_name(job))
    if current is None:
        # Key generation is CPU-bound; keep it off the event loop.
        desired = await asyncio.to_thread(new_ssh_secret, job, ctx.keygen)
        await create_or_adopt(ctx, shared, job, SECRETS, desired)
    elif not is_controlled_by(current, job.uid):
        raise not_ours(ctx, shared, secret_name(job), "Secret")


async def ensure_pod_group(ctx: SyncContext, shared: Obj, job: MPIJob) -> None:
    """Creates the t9k scheduler's PodGroup (called only when pods are about to be created)."""
    desired = new_pod_group(job)
    if desired is None:
        return
    try:
        await _ensure_pod_group(ctx, shared, job, desired)
    except ApiError as err:
        raise_if_not_served(err, T9K_POD_GROUPS, "spec.scheduler.t9kScheduler")
        raise


async def _ensure_pod_group(ctx: SyncContext, shared: Obj, job: MPIJob, desired: Obj) -> None:
    try:
        current = await ctx.client.get(T9K_POD_GROUPS, job.namespace, job.name)
    except ApiError as err:
        if not is_not_found(err) or is_not_served(err):
            raise
        await create_or_adopt(ctx, shared, job, T9K_POD_GROUPS, desired)
        return
    if not is_controlled_by(current, job.uid):
        raise not_ours(ctx, shared, job.name, "PodGroup")
    if current.get("spec") != desired["spec"]:
        await ctx.client.replace(
            T9K_POD_GROUPS, job.namespace, job.name, {**current, "spec": desired["spec"]}
        )


def job_pods(ctx: SyncContext, job: MPIJob) -> dict[str, Obj]:
    """This job's pods in the cache, by name."""
    selector = {OPERATOR_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job.name}
    return {
        str(p["metadata"]["name"]): p
        for p in ctx.listers.pods.list(selector, job.namespace)
        if is_controlled_by(p, job.uid)
    }


async def delete_pod(ctx: SyncContext, namespace: str, name: str) -> None:
    try:
        await ctx.client.delete(PODS, namespace, name)
    except ApiError as err:
        if not is_not_found(err):
            raise


async def create_pod(ctx: SyncContext, shared: Obj, job: MPIJob, pod: Obj) -> Obj:
    try:
        created: Obj = await ctx.client.create(PODS, job.namespace, pod)
        return created
    except ApiError as err:
        name = pod["metadata"]["name"]
        if is_already_exists(err):
            existing: Obj = await ctx.client.get(PODS, job.namespace, name)
            if is_controlled_by(existing, job.uid):
                return existing
            raise not_ours(ctx, shared, name, "Pod") from None
        ctx.recorder.event(
            job_reference(shared), WARNING, "FailedCreatePod", f"pod {name}: {err.message}"
        )
        raise
