"""Per-job times of the throughput scenario, from what the harness's pod watch saw.

A job's time from create to all its pods Ready is split into the steps that make it
up, each the moment its *last* pod got there (seconds after the job's create was
acknowledged):

* ``workers_exist``: the last worker pod was seen (the operator created them all);
* ``launcher_exists``: the launcher pod was seen (the operator created the launcher
  Job, and kube-controller-manager's Job controller its pod);
* ``scheduled``: the last pod was seen PodScheduled (kube-scheduler bound them all);
* ``ready``: the last pod was seen Ready (KWOK ran them all).

The first two are where the operator's own speed shows; the last two are the control
plane's, on the same two CPUs.
"""

from __future__ import annotations

import statistics

from .kube import JOB_NAME_LABEL, JOB_ROLE_LABEL, Watch
from .names import STEP_METRICS, STEPS


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def all_pods_ready(pods: Watch, per_job: int) -> dict[str, float]:
    """Job name -> the time the last of its ``per_job`` pods (launcher and workers)
    was first seen Ready, for the jobs whose pods all were.

    This is the physical "running" of a job. The Running condition is only written
    when an operator syncs the job while its launcher and all workers run at once; a
    short launcher can finish before that sync, and the job never shows Running."""
    return _last_per_job(pods, per_job, condition="Ready")


def step_times(pods: Watch, per_job: int) -> dict[str, dict[str, float]]:
    """Step (:data:`STEPS`) -> job name -> the time the job's last pod reached it, for
    the jobs all of whose ``per_job`` pods did."""
    return {
        "workers_exist": _last_per_job(pods, per_job - 1, role="worker"),
        "launcher_exists": _last_per_job(pods, 1, role="launcher"),
        "scheduled": _last_per_job(pods, per_job, condition="PodScheduled"),
        "ready": all_pods_ready(pods, per_job),
    }


def step_medians(
    steps: dict[str, dict[str, float]], created: dict[str, float]
) -> dict[str, float | None]:
    """:data:`STEP_METRICS`: the median over jobs of each step before Ready since the
    job's create was acknowledged (None when no job reached it)."""
    out: dict[str, float | None] = {}
    for step, metric in zip(STEPS[:-1], STEP_METRICS, strict=True):
        since = [t - created[job] for job, t in steps[step].items() if job in created]
        out[metric] = statistics.median(since) if since else None
    return out


def _last_per_job(
    pods: Watch, count: int, *, condition: str | None = None, role: str | None = None
) -> dict[str, float]:
    """Job -> the latest of its pods' times (first seen with ``condition`` True, or
    first seen at all), over the jobs that have ``count`` such pods (of ``role``)."""
    with pods.lock:
        times: dict[str, list[float]] = {}
        for name, labels in pods.labels.items():
            job = labels.get(JOB_NAME_LABEL)
            if not job or (role is not None and labels.get(JOB_ROLE_LABEL) != role):
                continue
            t = (
                pods.first_seen.get(name)
                if condition is None
                else pods.conditions.get((name, condition))
            )
            if t is not None:
                times.setdefault(job, []).append(t)
    return {job: max(ts) for job, ts in times.items() if len(ts) >= count}
