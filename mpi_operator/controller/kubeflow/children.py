"""The MPIJob's single children: Service, ConfigMap, Secret, PodGroup and the launcher
Job (get-or-create, suspension, stop); and, for the informer handlers, the MPIJob
behind a launcher pod, whose controller is the launcher Job (:class:`ThroughLauncherJob`).

Children missing from our label-filtered caches are created or adopted
(:func:`~mpi_operator.controller.core.owner.create_or_adopt`). PodGroups differ:
their cache is not filtered by label, so AlreadyExists is answered from it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from mpi_operator.api.object_model import Obj
from mpi_operator.api.scheduling import GangKind, GangScheduling
from mpi_operator.builders.kubeflow.common import (
    DISCOVER_HOSTS_SCRIPT_NAME,
    is_suspended,
    launcher_name,
)
from mpi_operator.builders.kubeflow.config import new_config_map
from mpi_operator.builders.kubeflow.launcher import (
    new_launcher_job,
    new_launcher_pod_template,
    sync_launcher_scheduling_directives,
)
from mpi_operator.builders.kubeflow.podgroup import (
    new_pod_group,
    pod_group_specs_equal,
    updated_pod_group,
)
from mpi_operator.builders.kubeflow.secret import new_ssh_auth_secret, secret_keys
from mpi_operator.builders.kubeflow.service import new_job_service
from mpi_operator.builders.kubeflow.worker import worker_replicas
from mpi_operator.builders.meta import deep_copy
from mpi_operator.builders.ssh import SSH_PRIVATE_KEY, SSH_PUBLIC_KEY
from mpi_operator.client import (
    CONFIGMAPS,
    JOBS,
    SECRETS,
    SERVICES,
    Lister,
    Resource,
    controller_of,
    is_controlled_by,
)
from mpi_operator.client.kubeapi import (
    POD_GROUPS_SCHEDULER_PLUGINS,
    POD_GROUPS_VOLCANO,
    POD_GROUPS_WORKLOAD_API,
    ApiError,
)
from mpi_operator.controller.core.crds import (
    GANG_SCHEDULING_FLAG,
    MissingCRDError,
    raise_if_not_served,
)
from mpi_operator.controller.core.objects import (
    is_job_finished,
    is_job_suspended,
    is_terminating,
    uid_of,
)
from mpi_operator.controller.core.own_writes import CONFIG_MAP
from mpi_operator.controller.core.owner import (
    Child,
    create_or_adopt,
    create_unless_cached,
    delete,
    ensure,
    ensure_controlled,
    warn,
)
from mpi_operator.controller.kubeflow.conditions import FAILED_REASON
from mpi_operator.controller.kubeflow.context import (
    NO_KIND,
    KubeflowSync,
    SyncContext,
    with_restart_attempt,
)
from mpi_operator.controller.kubeflow.workers import replica_index, worker_pods

SSH_SECRET_KEYS = sorted((SSH_PRIVATE_KEY, SSH_PUBLIC_KEY))
LAUNCHER_FAILED = "launcher pod created failed: "


async def ensure_environment(sync: KubeflowSync) -> None:
    """The Service, the ConfigMap (hostfile, ``discover_hosts.sh``) and the SSH Secret
    the pods need, ensured through one core call (:func:`~.core.owner.ensure`).
    Deviation: the reference creates them one after another."""
    ctx, owner, job = sync.ctx, sync.owner, sync.job
    service = new_job_service(job)
    replicas, running = worker_replicas(job), running_workers(sync)
    config = new_config_map(job, replicas, running, ctx.options.cluster_domain)
    config_current = ctx.state.own_writes.latest(
        sync.key, ctx.listers.configmaps.get(job.namespace, config["metadata"]["name"]), CONFIG_MAP
    )
    secret_current = ctx.listers.secrets.get(job.namespace, job.name + "-ssh")
    await ensure(
        ctx,
        owner,
        [
            Child(
                SERVICES,
                ctx.listers.services.get(job.namespace, service["metadata"]["name"]),
                lambda: service,
                NO_KIND,
                partial(_fix_service, sync, service),
            ),
            Child(
                CONFIGMAPS,
                config_current,
                lambda: config,
                NO_KIND,
                partial(_fix_config_map, sync, config, replicas, len(running)),
            ),
            Child(
                SECRETS,
                secret_current,
                partial(_new_secret, sync),
                NO_KIND,
                partial(_fix_secret, sync),
            ),
        ],
    )


async def _fix_service(sync: KubeflowSync, desired: Obj, current: Obj) -> None:
    spec, want = current.get("spec") or {}, desired["spec"]
    if spec.get("selector") != want["selector"] or bool(
        spec.get("publishNotReadyAddresses")
    ) != bool(want.get("publishNotReadyAddresses")):
        updated = {**current, "spec": {**spec, "selector": want["selector"]}}
        updated["spec"]["publishNotReadyAddresses"] = bool(want.get("publishNotReadyAddresses"))
        name = current["metadata"]["name"]
        await sync.ctx.client.replace(SERVICES, sync.job.namespace, name, updated)


def running_workers(sync: KubeflowSync) -> list[Obj]:
    """The hosts of ``discover_hosts.sh``: the Running workers. Of an elastic job (ours)
    only those that stay: not being deleted (a scale-down, an eviction) and within the
    replicas, so a scale-down's workers leave it before their pods are deleted."""
    # pod_phase, inlined: this runs over every worker on every sync of a big job.
    running = [p for p in worker_pods(sync) if (p.get("status") or {}).get("phase") == "Running"]
    job = sync.job
    if job.spec.elastic_policy is None:
        return running
    replicas = worker_replicas(job)
    return [
        p
        for p in running
        if not is_terminating(p) and ((index := replica_index(p)) is None or index < replicas)
    ]


async def _fix_config_map(
    sync: KubeflowSync, desired: Obj, replicas: int, running: int, current: Obj
) -> None:
    ctx, key = sync.ctx, sync.key
    data = current.get("data") or {}
    if data == desired["data"]:
        return
    progress = running < replicas and _more_hosts_only(data, desired["data"])
    if progress and ctx.state.progress.defer("configmap", key, ctx.requeue_after, replicas):
        return
    updated = {**current, "data": desired["data"]}
    result: Obj = await ctx.client.replace(
        CONFIGMAPS, sync.job.namespace, current["metadata"]["name"], updated
    )
    ctx.state.own_writes.wrote(key, current, result, CONFIG_MAP)
    if progress:
        ctx.state.progress.wrote("configmap", key, replicas)


def _more_hosts_only(current: Obj, desired: Obj) -> bool:
    """Only ``discover_hosts.sh`` changed, and only by gaining hosts."""
    others = {k: v for k, v in desired.items() if k != DISCOVER_HOSTS_SCRIPT_NAME}
    if {k: v for k, v in current.items() if k != DISCOVER_HOSTS_SCRIPT_NAME} != others:
        return False
    had = set(str(current.get(DISCOVER_HOSTS_SCRIPT_NAME) or "").splitlines())
    return had < set(str(desired.get(DISCOVER_HOSTS_SCRIPT_NAME) or "").splitlines())


async def _new_secret(sync: KubeflowSync) -> Obj:
    ctx, job = sync.ctx, sync.job
    # Key generation is CPU-bound; keep it off the event loop.
    return await asyncio.to_thread(new_ssh_auth_secret, job, ctx.keygen)


async def _fix_secret(sync: KubeflowSync, current: Obj) -> None:
    if secret_keys(current) != SSH_SECRET_KEYS:
        # Deviation: upstream generates a fresh key pair on every sync to learn
        # the expected key names; we know them, and generate only to repair.
        desired = await _new_secret(sync)
        updated = {**current, "data": desired["data"]}
        name = current["metadata"]["name"]
        await sync.ctx.client.replace(SECRETS, sync.job.namespace, name, updated)


def pod_group_resource(gang: GangScheduling) -> Resource:
    return _POD_GROUPS[gang.kind]


_POD_GROUPS = {
    GangKind.VOLCANO: POD_GROUPS_VOLCANO,
    GangKind.SCHEDULER_PLUGINS: POD_GROUPS_SCHEDULER_PLUGINS,
    GangKind.WORKLOAD_API: POD_GROUPS_WORKLOAD_API,
}


def _pod_group_resource(ctx: SyncContext) -> Resource:
    assert ctx.options.gang is not None
    return pod_group_resource(ctx.options.gang)


def _priority_classes(ctx: SyncContext) -> dict[str, int]:
    lister = ctx.listers.priority_classes
    if lister is None:
        return {}
    return {str(pc["metadata"]["name"]): int(pc.get("value") or 0) for pc in lister.list()}


async def ensure_pod_group(sync: KubeflowSync) -> None:
    ctx, owner, job = sync.ctx, sync.owner, sync.job
    gang = ctx.options.gang
    assert gang is not None and ctx.listers.pod_groups is not None
    resource = _pod_group_resource(ctx)
    desired = new_pod_group(job, gang, _priority_classes(ctx))
    try:
        lister = await ctx.listers.pod_groups.lister(ctx.client, job.namespace)
        current = await create_unless_cached(ctx, owner, resource, lister, desired)
        if current is not None and not pod_group_specs_equal(gang, current, desired):
            updated = updated_pod_group(current, desired)
            await ctx.client.replace(resource, job.namespace, job.name, updated)
    except ApiError as err:
        raise_if_not_served(err, resource, GANG_SCHEDULING_FLAG)
        raise


async def delete_pod_group(sync: KubeflowSync) -> None:
    ctx, owner, job = sync.ctx, sync.owner, sync.job
    if ctx.options.gang is None or ctx.listers.pod_groups is None:
        return
    try:
        lister = await ctx.listers.pod_groups.lister(ctx.client, job.namespace)
    except MissingCRDError:
        return  # not served: there is no PodGroup to delete
    current = lister.get(job.namespace, job.name)
    if current is None:
        return
    ensure_controlled(ctx, owner, current, "PodGroup")
    await delete(ctx, _pod_group_resource(ctx), job.namespace, job.name, uid=uid_of(current))


@dataclass(frozen=True, slots=True)
class ThroughLauncherJob:
    """The owner lookup of the Kubeflow children's handlers: a child's controller
    reference, and for a pod controlled by a batch Job (the launcher pod), that Job's
    (None when the Job is not cached)."""

    jobs: Lister

    def __call__(self, child: Obj) -> Mapping[str, Any] | None:
        owner = controller_of(child)
        if (
            owner is None
            or owner.get("kind") != "Job"
            or not str(owner.get("apiVersion", "")).startswith("batch/")
        ):
            return owner
        namespace = str((child.get("metadata") or {}).get("namespace") or "")
        job = self.jobs.get(namespace, str(owner.get("name", "")))
        return controller_of(job) if job is not None else None


def get_launcher(sync: KubeflowSync) -> Obj | None:
    ctx, owner, job = sync.ctx, sync.owner, sync.job
    launcher = ctx.listers.jobs.get(job.namespace, launcher_name(job))
    if launcher is not None:
        ensure_controlled(ctx, owner, launcher, NO_KIND)
    return launcher


def _report_warnings(sync: KubeflowSync, warnings: list[Any]) -> None:
    ctx, owner = sync.ctx, sync.owner
    for warning in warnings:
        warn(ctx, owner, warning.reason, warning.message)


async def create_launcher(sync: KubeflowSync) -> Obj:
    ctx, owner, job = sync.ctx, sync.owner, sync.job
    built = new_launcher_job(job, ctx.options.gang)
    _report_warnings(sync, built.warnings)
    with_restart_attempt(built.job, job)
    with_restart_attempt(built.job["spec"]["template"], job)
    failed = (FAILED_REASON, LAUNCHER_FAILED)
    return await create_or_adopt(ctx, owner, JOBS, built.job, NO_KIND, failed=failed)


async def sync_suspension(sync: KubeflowSync, launcher: Obj, *, hold_resume: bool = False) -> Obj:
    """Suspends or resumes the launcher Job to match the MPIJob; returns it as written.
    ``hold_resume`` keeps a suspended launcher suspended (its workers are not Ready)."""
    ctx, job = sync.ctx, sync.job
    suspended = is_suspended(job)
    if suspended == is_job_suspended(launcher):
        return launcher
    if not suspended and hold_resume:
        return launcher
    namespace, name = job.namespace, launcher_name(job)
    updated = deep_copy(launcher)
    if suspended:
        updated["spec"]["suspend"] = True
        result: Obj = await ctx.client.replace(JOBS, namespace, name, updated)
        return result
    if (updated.get("status") or {}).get("startTime") is not None:
        # The API server keeps a started Job's template immutable, and the
        # scheduling directives below must change: clear startTime first.
        del updated["status"]["startTime"]
        updated = await ctx.client.replace_status(JOBS, namespace, name, updated)
    desired = new_launcher_pod_template(job, ctx.options.gang)
    _report_warnings(sync, desired.warnings)
    updated = sync_launcher_scheduling_directives(updated, desired.template)
    updated["spec"]["suspend"] = False
    result = await ctx.client.replace(JOBS, namespace, name, updated)
    return result


async def stop_launcher(sync: KubeflowSync) -> None:
    """Suspends the launcher Job of a finished MPIJob while it still runs.

    Deviation (reference #647): the reference leaves it running, e.g. after its workers
    were evicted. Suspending, rather than deleting or shortening activeDeadlineSeconds,
    makes the Job controller delete its active pods while the Job object, its failed
    pods and its counts stay inspectable, and claims no failure the launcher did not have.
    """
    ctx, job = sync.ctx, sync.job
    launcher = ctx.listers.jobs.get(job.namespace, launcher_name(job))
    if launcher is None or not is_controlled_by(launcher, job.uid):
        return
    if is_job_finished(launcher) or is_job_suspended(launcher):
        return
    patch = {"spec": {"suspend": True}}
    await ctx.client.patch(JOBS, job.namespace, launcher_name(job), patch)
