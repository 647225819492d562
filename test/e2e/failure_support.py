"""Helpers of the failure e2e tests: MPIJobs applied, read and patched through the real
kubectl from async tests (the in-process operator keeps running meanwhile)."""

from __future__ import annotations

from typing import Any

import yaml
from examples_support import kubectl_async as kubectl
from examples_support import kubectl_json

from devcluster import COMPLETE_AFTER, EXIT_CODE, FAIL_FIRST_RUN_AFTER, REASON, START_DELAY
from devcluster.polling import eventually
from devcluster.sample_jobs import pi_mpijob

Obj = dict[str, Any]
JOB_NAME = "training.kubeflow.org/job-name"
JOB_ROLE = "training.kubeflow.org/job-role"


def oom_job(
    name: str,
    first_run_only: bool,
    clean_pod_policy: str,
    *,
    launcher_runs_for: str = "10s",
    creation_policy: str | None = None,
    start_delay: str | None = None,
) -> Obj:
    """Workers OOMKilled 2s after they run (on the first run only, or on every run),
    starting ``start_delay`` after they are scheduled; a launcher that succeeds
    ``launcher_runs_for`` after it runs; restarts on OOM, at most two."""
    fail = {FAIL_FIRST_RUN_AFTER: "2s"} if first_run_only else {COMPLETE_AFTER: "2s"}
    delay = {START_DELAY: start_delay} if start_delay else {}
    worker = {
        "metadata": {"annotations": {**fail, **delay, EXIT_CODE: "137", REASON: "OOMKilled"}},
        "spec": {"containers": [{"name": "worker", "image": "mpi-pi"}]},
    }
    job = pi_mpijob(
        name,
        launcher_exit=0,
        complete_after=launcher_runs_for,
        creation_policy=creation_policy,
        worker_template=worker,
    )
    job["spec"]["runPolicy"]["cleanPodPolicy"] = clean_pod_policy
    job["spec"]["runPolicy"]["failurePolicy"] = {
        "maxRestarts": 2,
        "rules": [{"name": "oom", "action": "RestartJob", "onTerminationReasons": ["OOMKilled"]}],
    }
    return job


async def apply_job(cluster: Any, ns: str, obj: Obj) -> None:
    await kubectl(cluster, "apply", "-n", ns, "-f", "-", input=yaml.safe_dump(obj))


async def condition(cluster: Any, ns: str, name: str, kind: str) -> Obj:
    job = await kubectl_json(cluster, "get", "mpijob", name, "-n", ns)
    for c in (job.get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return dict(c)
    return {}


async def wait_condition(cluster: Any, ns: str, name: str, kind: str, within: float) -> Obj:
    async def true() -> bool:
        return (await condition(cluster, ns, name, kind)).get("status") == "True"

    await eventually(true, within=within, interval=0.2, what=f"{name} {kind}")
    return await condition(cluster, ns, name, kind)


async def job_pods(cluster: Any, ns: str, name: str) -> list[Obj]:
    pods = await kubectl_json(cluster, "get", "pods", "-n", ns, "-l", f"{JOB_NAME}={name}")
    return list(pods["items"])


def role(pod: Obj) -> str:
    return str(pod["metadata"]["labels"].get(JOB_ROLE) or "")


async def job_events(cluster: Any, ns: str, name: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the MPIJob's events, one per Event object."""
    return [(e["type"], e["reason"], e["message"]) for e in await event_objects(cluster, ns, name)]


async def event_objects(cluster: Any, ns: str, name: str) -> list[Obj]:
    items = (
        await kubectl_json(
            cluster, "get", "events", "-n", ns, "--field-selector", f"involvedObject.name={name}"
        )
    )["items"]
    return [e for e in items if e["involvedObject"]["kind"] == "MPIJob"]


async def patch_suspend(cluster: Any, ns: str, name: str, suspend: bool) -> None:
    body = '{"spec": {"runPolicy": {"suspend": %s}}}' % ("true" if suspend else "false")
    await kubectl(cluster, "patch", "mpijob", name, "-n", ns, "--type=merge", "-p", body)


def ready_times(pods: list[Obj]) -> list[str]:
    """When each Ready pod became Ready (RFC 3339 UTC stamps compare as strings)."""
    return [
        c["lastTransitionTime"]
        for p in pods
        for c in (p.get("status") or {}).get("conditions") or []
        if c["type"] == "Ready" and c["status"] == "True"
    ]
