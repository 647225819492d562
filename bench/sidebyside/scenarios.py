"""The scenarios, each run against one already-started operator in a fresh namespace.

Times are seconds on the harness's monotonic clock, measured from just before the
first create request; "seen" means the harness's watch delivered the object.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from devcluster import LocalCluster, wait_for

from .job_times import percentile, step_medians, step_times
from .kube import (
    JOB_NAME_LABEL,
    JOB_ROLE_LABEL,
    MPIJOBS,
    PODS,
    RawClient,
    Watch,
    mpijob,
    unrelated_pod,
    worker_like_pod,
)
from .names import BIG, SMALL
from .operators import RunningOperator
from .scheduler_quiet import wait_until_quiet

#: Seconds a throughput run waits, after the last MPIJob finished, for the workers'
#: deletion (cleanPodPolicy Running). At 5 QPS, 800 deletes need 160 s.
CLEANUP_WAIT = 300.0


def delete_namespace(cluster: LocalCluster, ns: str, timeout: float = 600) -> float:
    """Delete ``ns`` and wait until it is gone; return the seconds it took."""
    t0 = time.monotonic()
    cluster.delete_namespace(ns)
    wait_for(
        lambda: cluster.request("GET", f"/api/v1/namespaces/{ns}")[0] == 404,
        timeout,
        f"namespace {ns} deleted",
        interval=0.5,
    )
    return time.monotonic() - t0


#: Share of the big job's workers seen before the small job is created.
SMALL_AFTER = 0.1
#: Seconds the small job may take beyond the big job's measurements.
SMALL_WAIT = 60.0


#: Seconds the control plane may take to work off the runs before.
SETTLE_TIMEOUT = 180.0
#: Seconds kube-scheduler's client needs to refill its burst once its backlog is gone
#: (its defaults: burst 100 at 50 QPS), and a margin.
SCHEDULER_REFILL_S = 2.5
#: Seconds the settle waits for kube-scheduler to be quiet after the canary is Ready.
SCHEDULER_QUIET_TIMEOUT = 60.0


def settle(cluster: LocalCluster, ns: str, n: int, timeout: float = SETTLE_TIMEOUT) -> float:
    """Creates canary pod ``n`` in ``ns`` and waits until it is Ready; deletes it and
    returns the seconds it took.

    kube-scheduler's client takes its tokens first come, first served (50 QPS here), and
    KWOK works through pod updates in order: a run that created hundreds of pods leaves
    bindings, events and status updates queued for seconds (12.6 s of throttling were
    logged at the start of the run after a raw-client fan-out of 500 pods). The
    canary's binding and Ready status wait behind them, so the next run starts on a
    quiet control plane instead of inheriting the previous one's backlog. Once the
    canary is Ready, the settle waits until kube-scheduler's metrics show it quiet
    (:mod:`.scheduler_quiet`: a deleted run's pods can keep its client busy after the
    canary), then gives its client ``SCHEDULER_REFILL_S`` to refill the burst the
    backlog spent (all counted in the seconds returned): otherwise a run right after a
    big one had its first 100 bindings throttled, and the next run none."""
    path = PODS.format(ns=ns)
    name = f"canary-{n}"
    pods = Watch(cluster, path, f"{JOB_NAME_LABEL}=settle").start()
    try:
        t0 = time.monotonic()
        status, body = cluster.request("POST", path, worker_like_pod(name, "settle"))
        if status != 201:
            raise RuntimeError(f"creating the canary pod: {status} {body}")
        pods.wait(lambda: (name, "Ready") in pods.conditions, timeout, "the canary pod Ready")
        if not wait_until_quiet(
            lambda: cluster.component_metrics("kube-scheduler"), SCHEDULER_QUIET_TIMEOUT
        ):
            print(
                f"settle: kube-scheduler not quiet after {SCHEDULER_QUIET_TIMEOUT:.0f} s",
                flush=True,
            )
        time.sleep(SCHEDULER_REFILL_S)
        return time.monotonic() - t0
    finally:
        pods.stop()
        cluster.request("DELETE", f"{path}/{name}", {"gracePeriodSeconds": 0})


def fanout(
    cluster: LocalCluster,
    op: RunningOperator,
    ns: str,
    workers: int,
    timeout: float,
    fairness: bool = False,
    running_wait: float | None = None,
) -> dict[str, Any]:
    """One MPIJob of ``workers`` workers (launcher runs on): seconds until every worker
    pod exists, and until the MPIJob's Running condition.

    ``running_wait``: seconds to wait for Running once all pods exist; when cut there,
    ``running_s`` is a lower bound and ``running_timed_out`` True (CPU up to then).
    ``fairness``: see :func:`_small_job`."""
    selector = f"{JOB_ROLE_LABEL}=worker,{JOB_NAME_LABEL}={BIG}"
    pods = Watch(cluster, PODS.format(ns=ns), selector).start()
    jobs = Watch(cluster, MPIJOBS.format(ns=ns)).start()
    small = Watch(cluster, PODS.format(ns=ns), f"{JOB_NAME_LABEL}={SMALL}")
    if fairness:
        small.start()
    cpu0 = op.stats().cpu_seconds
    try:
        t0 = time.monotonic()
        _create(cluster, ns, mpijob(BIG, workers, None))
        t_small, seen_then = None, 0
        if fairness:
            some = max(1, int(workers * SMALL_AFTER))
            pods.wait(lambda: len(pods.first_seen) >= some, timeout, f"{some} worker pods")
            t_small, seen_then = time.monotonic(), len(pods.first_seen)
            _create(cluster, ns, mpijob(SMALL, 1, None))
        pods.wait(lambda: len(pods.first_seen) >= workers, timeout, f"{workers} worker pods")
        t_pods = max(pods.first_seen.values()) - t0
        out: dict[str, Any] = {"all_pods_created_s": t_pods}
        out.update(_running(jobs, t0, timeout, running_wait))
        op.check_alive()
        stats = op.stats()
        out.update(
            first_pod_s=min(pods.first_seen.values()) - t0,
            cpu_s=stats.cpu_seconds - cpu0,
            peak_rss_kib=stats.hwm_kib,
        )
        if t_small is not None:
            out.update(small_job_at_workers=seen_then, **_small_job(small, jobs, t_small))
        return out
    finally:
        pods.stop()
        jobs.stop()
        small.stop()


def _create(cluster: LocalCluster, ns: str, job: dict[str, Any]) -> None:
    status, body = cluster.request("POST", MPIJOBS.format(ns=ns), job)
    if status != 201:
        raise RuntimeError(f"creating the MPIJob {job['metadata']['name']}: {status} {body}")


def _running(jobs: Watch, t0: float, timeout: float, running_wait: float | None) -> dict[str, Any]:
    """Seconds from ``t0`` until the big MPIJob's Running condition; cut after
    ``running_wait`` seconds (from now) as a lower bound, if it is the shorter wait."""
    wait = timeout if running_wait is None else min(timeout, running_wait)

    def running() -> bool:
        return (BIG, "Running") in jobs.conditions

    try:
        jobs.wait(running, wait, "the MPIJob Running")
    except TimeoutError:
        if running_wait is None or running_wait >= timeout:
            raise
        return {"running_s": time.monotonic() - t0, "running_timed_out": True}
    return {"running_s": jobs.conditions[(BIG, "Running")] - t0, "running_timed_out": False}


def _small_job(small: Watch, jobs: Watch, t_small: float) -> dict[str, Any]:
    """Fairness: seconds from the small job's create request until its launcher and
    worker pods were both seen (``small_job_pods_s``), and until its Created condition
    (``small_job_created_s``). Not seen within ``SMALL_WAIT`` more seconds: the time
    waited, a lower bound (``small_job_pods_timed_out`` / ``small_job_created_timed_out``)."""

    def roles() -> set[str]:
        return {labels.get(JOB_ROLE_LABEL, "") for labels in small.labels.values()}

    out: dict[str, Any] = {}
    try:
        small.wait(lambda: {"launcher", "worker"} <= roles(), SMALL_WAIT, "the small job's pods")
        out["small_job_pods_s"] = max(small.first_seen.values()) - t_small
        out["small_job_pods_timed_out"] = False
    except TimeoutError:
        out["small_job_pods_s"] = time.monotonic() - t_small
        out["small_job_pods_timed_out"] = True
    try:
        jobs.wait(lambda: (SMALL, "Created") in jobs.conditions, SMALL_WAIT, "small Created")
        out["small_job_created_s"] = jobs.conditions[(SMALL, "Created")] - t_small
        out["small_job_created_timed_out"] = False
    except TimeoutError:
        out["small_job_created_s"] = time.monotonic() - t_small
        out["small_job_created_timed_out"] = True
    return out


def throughput(
    cluster: LocalCluster,
    op: RunningOperator,
    ns: str,
    jobs_n: int,
    workers: int,
    launcher_seconds: float,
    timeout: float,
    submit_threads: int = 16,
) -> dict[str, Any]:
    """``jobs_n`` MPIJobs submitted at once, launchers completing after
    ``launcher_seconds``: seconds until all Succeeded; per-job create-to-Running.

    When they are not all finished after ``timeout`` seconds, ``timed_out`` is True and
    ``all_succeeded_s`` is the timeout (a lower bound); percentiles then cover the jobs
    that did reach Running (``never_running`` counts the others)."""
    jobs = Watch(cluster, MPIJOBS.format(ns=ns)).start()
    pods = Watch(cluster, PODS.format(ns=ns), JOB_NAME_LABEL).start()
    cpu0 = op.stats().cpu_seconds
    try:
        names = [f"job-{i:04d}" for i in range(jobs_n)]
        path = MPIJOBS.format(ns=ns)
        client = RawClient(cluster, threads=submit_threads)  # unthrottled: "at once"
        t0 = time.monotonic()
        acks = client.create_all([(path, mpijob(n, workers, launcher_seconds)) for n in names])
        created = dict(zip(names, acks, strict=True))
        t_submitted = max(acks) - t0

        def all_finished() -> bool:
            done = [n for (n, c) in jobs.conditions if c in ("Succeeded", "Failed")]
            return len(done) >= jobs_n

        timed_out = False
        try:
            jobs.wait(all_finished, timeout, f"{jobs_n} MPIJobs finished")
        except TimeoutError:
            # Kept as a lower bound: "all Succeeded" took at least the timeout.
            timed_out = True
        t_end = time.monotonic() - t0
        # The lifecycle ends when cleanPodPolicy Running has deleted the workers: the
        # API cost and CPU include that work, whichever operator is still doing it. An
        # operator that leaves workers behind gets CLEANUP_WAIT seconds, then they are
        # counted in ``workers_left``.
        cleanup_s: float | None = None
        if not timed_out:
            try:
                wait_for(
                    lambda: not live_workers(cluster, ns),
                    min(timeout, CLEANUP_WAIT),
                    "the workers deleted (cleanPodPolicy Running)",
                    interval=0.5,
                )
                cleanup_s = time.monotonic() - t0
            except TimeoutError:
                pass
        workers_left = len(live_workers(cluster, ns))
        op.check_alive()
        stats = op.stats()
        failed = [n for (n, c) in jobs.conditions if c == "Failed"]
        succeeded = jobs.with_condition("Succeeded")
        running = jobs.with_condition("Running")
        to_running = [running[n] - created[n] for n in names if n in running]
        steps = step_times(pods, workers + 1)
        started = steps["ready"]
        to_pods_ready = [started[n] - created[n] for n in names if n in started]
        if timed_out:
            all_succeeded: float | None = t_end
        else:
            all_succeeded = max(succeeded.values()) - t0 if succeeded else None
        return {
            "all_succeeded_s": all_succeeded,
            "timed_out": timed_out,
            "workers_deleted_s": cleanup_s,
            "workers_left": workers_left,
            "succeeded": len(succeeded),
            "submitted_s": t_submitted,
            "failed": len(failed),
            "never_running": jobs_n - len(to_running),
            "create_to_running_p50_s": statistics.median(to_running) if to_running else None,
            "create_to_running_p99_s": percentile(to_running, 99) if to_running else None,
            "create_to_pods_ready_p50_s": (
                statistics.median(to_pods_ready) if to_pods_ready else None
            ),
            "create_to_pods_ready_p99_s": (
                percentile(to_pods_ready, 99) if to_pods_ready else None
            ),
            **step_medians(steps, created),
            "cpu_s": stats.cpu_seconds - cpu0,
            "peak_rss_kib": stats.hwm_kib,
        }
    finally:
        jobs.stop()
        pods.stop()


def live_workers(cluster: LocalCluster, ns: str) -> list[str]:
    """Worker pods of ``ns`` not being deleted."""
    status, body = cluster.request(
        "GET", PODS.format(ns=ns) + f"?labelSelector={JOB_ROLE_LABEL}%3Dworker"
    )
    if status != 200:
        raise RuntimeError(f"list pods: {status} {body}")
    return [
        p["metadata"]["name"]
        for p in body.get("items", [])
        if not p["metadata"].get("deletionTimestamp")
    ]


def create_unrelated_pods(
    cluster: LocalCluster, total: int, namespaces: int = 10, threads: int = 16
) -> dict[str, Any]:
    """``total`` Pending pods spread over ``namespaces`` fresh namespaces."""
    names = [cluster.create_namespace("unrelated", wait_for_sa=False) for _ in range(namespaces)]
    items = [
        (PODS.format(ns=names[i % namespaces]), unrelated_pod(f"unrelated-{i:05d}"))
        for i in range(total)
    ]
    t0 = time.monotonic()
    RawClient(cluster, threads=threads).create_all(items)
    return {"pods": total, "namespaces": names, "seconds": time.monotonic() - t0}
