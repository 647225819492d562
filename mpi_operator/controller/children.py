"""Get-or-create of the MPIJob's single children: Service, ConfigMap, Secret, PodGroup.

Our caches only hold objects with the operator label. An object made by an
older operator (or by the reference operator) lacks it, so it is invisible to
the cache: creating it then fails with AlreadyExists, and we read it directly
and adopt it (add the label) when this MPIJob controls it. PodGroups differ:
their cache is not filtered by label, so AlreadyExists is answered from it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mpi_operator.api.scheduling import GangKind, GangScheduling
from mpi_operator.api.v2beta1 import MPIJob
from mpi_operator.builders.common import (
    DISCOVER_HOSTS_SCRIPT_NAME,
    SSH_PRIVATE_KEY,
    SSH_PUBLIC_KEY,
)
from mpi_operator.builders.config import new_config_map
from mpi_operator.builders.podgroup import (
    new_pod_group,
    pod_group_specs_equal,
)
from mpi_operator.builders.secret import new_ssh_auth_secret, secret_keys
from mpi_operator.builders.service import new_job_service
from mpi_operator.builders.worker import worker_replicas
from mpi_operator.client import (
    CONFIGMAPS,
    SECRETS,
    SERVICES,
    WARNING,
    Lister,
    Resource,
    is_already_exists,
    is_controlled_by,
    is_not_found,
)
from mpi_operator.client.kubeapi import (
    POD_GROUPS_SCHEDULER_PLUGINS,
    POD_GROUPS_VOLCANO,
    ApiError,
)
from mpi_operator.controller.context import (
    ERR_RESOURCE_EXISTS,
    MESSAGE_RESOURCE_EXISTS,
    SyncContext,
    SyncError,
    has_operator_label,
    job_reference,
    with_operator_label,
)
from mpi_operator.controller.missing_crd import raise_if_not_served
from mpi_operator.controller.status import pod_phase
from mpi_operator.controller.workers import worker_pods

Obj = dict[str, Any]

SSH_SECRET_KEYS = sorted((SSH_PRIVATE_KEY, SSH_PUBLIC_KEY))

# The reference operator reads Kind from typed cache objects, where it is empty,
# so its messages say Kind "" for these children; we keep its exact text.
_NO_KIND = ""


def ensure_controlled(ctx: SyncContext, shared: Obj, job: MPIJob, obj: Obj, kind: str) -> None:
    if not is_controlled_by(obj, job.uid):
        message = MESSAGE_RESOURCE_EXISTS.format(name=obj["metadata"]["name"], kind=kind)
        ctx.recorder.event(job_reference(shared), WARNING, ERR_RESOURCE_EXISTS, message)
        raise SyncError(message)


async def create_or_adopt(
    ctx: SyncContext, shared: Obj, job: MPIJob, resource: Resource, desired: Obj, kind: str
) -> Obj:
    namespace = job.namespace
    try:
        created: Obj = await ctx.client.create(resource, namespace, with_operator_label(desired))
        return created
    except ApiError as err:
        if not is_already_exists(err):
            raise
    existing = await ctx.client.get(resource, namespace, desired["metadata"]["name"])
    ensure_controlled(ctx, shared, job, existing, kind)
    if not has_operator_label(existing):
        patch = {"metadata": {"labels": with_operator_label({})["metadata"]["labels"]}}
        existing = await ctx.client.patch(resource, namespace, existing["metadata"]["name"], patch)
    return existing


def cached(lister: Lister, job: MPIJob, name: str) -> Obj | None:
    return lister.get(job.namespace, name)


async def ensure_service(ctx: SyncContext, shared: Obj, job: MPIJob) -> Obj:
    desired = new_job_service(job)
    current = cached(ctx.listers.services, job, desired["metadata"]["name"])
    if current is None:
        return await create_or_adopt(ctx, shared, job, SERVICES, desired, _NO_KIND)
    ensure_controlled(ctx, shared, job, current, _NO_KIND)
    spec, want = current.get("spec") or {}, desired["spec"]
    if spec.get("selector") != want["selector"] or bool(
        spec.get("publishNotReadyAddresses")
    ) != bool(want.get("publishNotReadyAddresses")):
        updated = {**current, "spec": {**spec, "selector": want["selector"]}}
        updated["spec"]["publishNotReadyAddresses"] = bool(want.get("publishNotReadyAddresses"))
        result: Obj = await ctx.client.replace(
            SERVICES, job.namespace, current["metadata"]["name"], updated
        )
        return result
    return current


def running_workers(ctx: SyncContext, job: MPIJob) -> list[Obj]:
    return [p for p in worker_pods(ctx, job) if pod_phase(p) == "Running"]


async def ensure_config_map(ctx: SyncContext, shared: Obj, job: MPIJob) -> Obj:
    replicas, running = worker_replicas(job), running_workers(ctx, job)
    desired = new_config_map(job, replicas, running, ctx.options.cluster_domain)
    current = cached(ctx.listers.configmaps, job, desired["metadata"]["name"])
    if current is None:
        return await create_or_adopt(ctx, shared, job, CONFIGMAPS, desired, _NO_KIND)
    ensure_controlled(ctx, shared, job, current, _NO_KIND)
    data = current.get("data") or {}
    if data != desired["data"]:
        key = f"{job.namespace}/{job.name}"
        progress = len(running) < replicas and _more_hosts_only(data, desired["data"])
        if progress and ctx.progress.defer("configmap", key, ctx.requeue_after):
            return current
        updated = {**current, "data": desired["data"]}
        result: Obj = await ctx.client.replace(
            CONFIGMAPS, job.namespace, current["metadata"]["name"], updated
        )
        if progress:
            ctx.progress.wrote("configmap", key)
        return result
    return current


def _more_hosts_only(current: Obj, desired: Obj) -> bool:
    """Only ``discover_hosts.sh`` changed, and only by gaining hosts."""
    others = {k: v for k, v in desired.items() if k != DISCOVER_HOSTS_SCRIPT_NAME}
    if {k: v for k, v in current.items() if k != DISCOVER_HOSTS_SCRIPT_NAME} != others:
        return False
    had = set(str(current.get(DISCOVER_HOSTS_SCRIPT_NAME) or "").splitlines())
    return had < set(str(desired.get(DISCOVER_HOSTS_SCRIPT_NAME) or "").splitlines())


async def _new_secret(ctx: SyncContext, job: MPIJob) -> Obj:
    # Key generation is CPU-bound; keep it off the event loop.
    return await asyncio.to_thread(new_ssh_auth_secret, job, ctx.keygen)


async def ensure_ssh_secret(ctx: SyncContext, shared: Obj, job: MPIJob) -> Obj:
    name = job.name + "-ssh"
    current = cached(ctx.listers.secrets, job, name)
    if current is None:
        desired = await _new_secret(ctx, job)
        return await create_or_adopt(ctx, shared, job, SECRETS, desired, _NO_KIND)
    ensure_controlled(ctx, shared, job, current, _NO_KIND)
    if secret_keys(current) != SSH_SECRET_KEYS:
        # Deviation: upstream generates a fresh key pair on every sync to learn
        # the expected key names; we know them, and generate only to repair.
        desired = await _new_secret(ctx, job)
        updated = {**current, "data": desired["data"]}
        result: Obj = await ctx.client.replace(SECRETS, job.namespace, name, updated)
        return result
    return current


def pod_group_resource(gang: GangScheduling) -> Resource:
    return POD_GROUPS_VOLCANO if gang.kind is GangKind.VOLCANO else POD_GROUPS_SCHEDULER_PLUGINS


def _pod_group_resource(ctx: SyncContext) -> Resource:
    assert ctx.options.gang is not None
    return pod_group_resource(ctx.options.gang)


def _priority_classes(ctx: SyncContext) -> dict[str, int]:
    lister = ctx.listers.priority_classes
    if lister is None:
        return {}
    return {str(pc["metadata"]["name"]): int(pc.get("value") or 0) for pc in lister.list()}


async def ensure_pod_group(ctx: SyncContext, shared: Obj, job: MPIJob) -> Obj:
    try:
        return await _ensure_pod_group(ctx, shared, job)
    except ApiError as err:
        raise_if_not_served(err, _pod_group_resource(ctx), "--gang-scheduling")
        raise


async def _ensure_pod_group(ctx: SyncContext, shared: Obj, job: MPIJob) -> Obj:
    gang = ctx.options.gang
    assert gang is not None and ctx.listers.pod_groups is not None
    resource = _pod_group_resource(ctx)
    desired = new_pod_group(job, gang, _priority_classes(ctx))
    current = cached(ctx.listers.pod_groups, job, job.name)
    if current is None:
        try:
            created: Obj = await ctx.client.create(
                resource, job.namespace, with_operator_label(desired)
            )
            return created
        except ApiError as err:
            # Never read from the API (the role grants no get on PodGroups): their
            # cache is not filtered by label, so it holds every PodGroup, and one it
            # has not seen yet is a retry away, as in the reference operator.
            current = cached(ctx.listers.pod_groups, job, job.name)
            if not is_already_exists(err) or current is None:
                raise
    ensure_controlled(ctx, shared, job, current, "PodGroup")
    if not pod_group_specs_equal(gang, current, desired):
        updated = {**current, "spec": desired["spec"]}
        result: Obj = await ctx.client.replace(resource, job.namespace, job.name, updated)
        return result
    return current


async def delete_pod_group(ctx: SyncContext, shared: Obj, job: MPIJob) -> None:
    if ctx.options.gang is None or ctx.listers.pod_groups is None:
        return
    current = cached(ctx.listers.pod_groups, job, job.name)
    if current is None:
        return
    ensure_controlled(ctx, shared, job, current, "PodGroup")
    try:
        await ctx.client.delete(_pod_group_resource(ctx), job.namespace, job.name)
    except ApiError as err:
        if not is_not_found(err):
            raise
