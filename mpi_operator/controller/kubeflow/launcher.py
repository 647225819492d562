"""The launcher Job: find it, create it, and keep its suspension in step with the MPIJob;
and, for the informer handlers, find the MPIJob behind a launcher pod, whose
controller is the launcher Job (:class:`ThroughLauncherJob`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mpi_operator.api.object_model import Obj
from mpi_operator.builders.kubeflow.common import (
    is_suspended,
    launcher_name,
)
from mpi_operator.builders.kubeflow.launcher import (
    new_launcher_job,
    new_launcher_pod_template,
    sync_launcher_scheduling_directives,
)
from mpi_operator.builders.meta import deep_copy
from mpi_operator.client import (
    JOBS,
    Lister,
    controller_of,
    is_controlled_by,
)
from mpi_operator.controller.core.objects import is_job_finished, is_job_suspended
from mpi_operator.controller.core.owner import (
    create_or_adopt,
    ensure_controlled,
    warn,
)
from mpi_operator.controller.kubeflow.conditions import FAILED_REASON
from mpi_operator.controller.kubeflow.context import (
    NO_KIND,
    KubeflowSync,
    with_restart_attempt,
)

LAUNCHER_FAILED = "launcher pod created failed: "


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
