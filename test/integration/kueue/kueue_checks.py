"""The Kueue suite's MPIJob and the checks its tests make on MPIJobs, Workloads and
pods (plain functions of the objects read from the API)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from devcluster import COMPLETE_AFTER
from devcluster.kueue import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from devcluster.sample_jobs import pi_mpijob

Obj = dict[str, Any]


def queued_mpijob(
    name: str,
    queue: str,
    *,
    workers: int = 2,
    launcher_runs_for: str | None = None,
    priority_class: str | None = None,
) -> Obj:
    """An MPIJob for LocalQueue ``queue``: every container requests one CPU (Kueue counts
    requests against quota); the launcher pod finishes (exit 0) ``launcher_runs_for``
    after it starts on a KWOK node, or runs until :meth:`KueueObjects.finish_launcher`."""
    job = pi_mpijob(name, workers=workers, launcher_exit=None)
    labels = {QUEUE_NAME_LABEL: queue}
    if priority_class:
        labels[PRIORITY_CLASS_LABEL] = priority_class
    job["metadata"]["labels"] = labels
    for spec in job["spec"]["mpiReplicaSpecs"].values():
        for container in spec["template"]["spec"]["containers"]:
            container["resources"] = {"requests": {"cpu": "1"}}
    if launcher_runs_for:
        launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
        launcher.setdefault("metadata", {}).setdefault("annotations", {})[COMPLETE_AFTER] = (
            launcher_runs_for
        )
    return job


def condition(obj: Obj, kind: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def is_true(obj: Obj, kind: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == "True"


def phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase", ""))


def is_launcher(pod: Obj, job: str) -> bool:
    return bool(
        pod["metadata"].get("labels", {}).get("batch.kubernetes.io/job-name") == f"{job}-launcher"
    )


def podsets(workload: Obj) -> list[tuple[str, int]]:
    return [(p["name"], int(p["count"])) for p in workload["spec"]["podSets"]]


def suspended(job: Obj) -> bool:
    return bool(((job.get("spec") or {}).get("runPolicy") or {}).get("suspend"))


def job_condition(job: Obj, kind: str) -> tuple[str, str]:
    c = condition(job, kind) or {}
    return str(c.get("status", "")), str(c.get("reason", ""))


async def holds(check: Callable[[], Awaitable[bool]], seconds: float, what: str) -> None:
    """Polls ``check`` every 0.25 s for ``seconds``: it must be true every time (the
    opposite of :func:`eventually`: something that must not happen does not)."""
    deadline = time.monotonic() + seconds
    while True:
        assert await check(), f"{what} stopped holding"
        if time.monotonic() >= deadline:
            return
        await asyncio.sleep(0.25)
