"""The API server misbehaving: restarts, 410 Gone after etcd compaction, 409 conflicts
from a concurrent writer, client throttling, and an outage in the middle of a run."""

from __future__ import annotations

import random
import threading
import time
from datetime import datetime

from chaos_support import (
    MPIJOBS,
    Obj,
    Operators,
    api,
    condition,
    create_mpijob,
    delete_all_and_check_no_orphans,
    report,
    scale,
    wait_final,
    wait_leading,
)
from duplicate_watch import Watcher

from devcluster import LocalCluster
from devcluster.sample_jobs import pi_mpijob

# Long enough for the operator to keep its lease through an API server restart, so
# that the informers' relist (not a process restart) is what is exercised.
PATIENT_LEASE = ("--lease-duration=60", "--renew-deadline=45", "--retry-period=1")
STATUS_DEADLINE = 30.0


def _ts(value: str) -> float:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S%z").timestamp()


def _launcher_finished_at(cluster: LocalCluster, ns: str, name: str) -> float:
    job = api(cluster, "GET", f"/apis/batch/v1/namespaces/{ns}/jobs/{name}-launcher")
    for c in job["status"].get("conditions") or []:
        if c["type"] in ("Complete", "Failed") and c["status"] == "True":
            return _ts(c["lastTransitionTime"])
    raise AssertionError(f"launcher of {name} not finished: {job['status']}")


def _expected_jobs(
    prefix: str, count: int, rng: random.Random, spread: int
) -> tuple[dict[str, str], list[Obj]]:
    expected, specs = {}, []
    for i in range(count):
        name = f"{prefix}-{i}"
        exit_code = 1 if i % 4 == 3 else 0
        expected[name] = "Failed" if exit_code else "Succeeded"
        specs.append(
            pi_mpijob(name, launcher_exit=exit_code, complete_after=f"{rng.randint(3, spread)}s")
        )
    return expected, specs


def test_chaos_apiserver_restarts_and_410_lose_no_final_state(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators
) -> None:
    ns = full_namespace
    rng = random.Random()
    expected, specs = _expected_jobs("blip", scale(8, 40), rng, 20)
    returns: list[float] = []
    with Watcher(full_cluster, f"/api/v1/namespaces/{ns}/pods", pods=True) as pods:
        proc = operators.start(ns, lease=PATIENT_LEASE)
        wait_leading(proc)
        for obj in specs:
            create_mpijob(full_cluster, ns, obj)
        for _ in range(2):
            time.sleep(rng.uniform(1, 5))  # a random fault moment
            full_cluster.restart_apiserver()
            returns.append(time.time())
        # Every watch of the operator now resumes from a compacted revision: 410 Gone
        # (restarting the API server drops its watch cache, which would serve it).
        time.sleep(rng.uniform(1, 5))
        full_cluster.compact_etcd()
        full_cluster.restart_apiserver()
        returns.append(time.time())
        finished = wait_final(full_cluster, ns, expected, timeout=scale(180, 400))
        duplicates = pods.record.duplicates

    late = {}
    for name, job in finished.items():
        mpi_done = _ts(condition(job, expected[name])["lastTransitionTime"])  # type: ignore[index]
        launcher_done = _launcher_finished_at(full_cluster, ns, name)
        # Whole seconds on both sides: one second of slack.
        lag = mpi_done - max(launcher_done, returns[-1])
        if lag > STATUS_DEADLINE + 1:
            late[name] = lag
    crashes = operators.crashes()
    report(
        test="apiserver-restarts",
        jobs=len(expected),
        apiserver_restarts=len(returns),
        etcd_compactions=1,
        duplicates=len(duplicates),
        lost_updates=len(late),
        crashes=len(crashes),
        max_status_lag_s=max(
            (
                _ts(condition(j, expected[n])["lastTransitionTime"])  # type: ignore[index]
                - max(_launcher_finished_at(full_cluster, ns, n), returns[-1])
                for n, j in finished.items()
            ),
            default=0,
        ),
    )
    assert not duplicates, duplicates
    assert not crashes, crashes
    operators.collect_secrets()
    delete_all_and_check_no_orphans(full_cluster, ns)
    # The informers' reconnect backoff (client/reflector.py) and a key's retry after a
    # failure to reach the server (controller/runner.py) are both capped at 10 s, so
    # three outages in a row still leave a final status within 30 s.
    assert not late, f"final status later than {STATUS_DEADLINE}s after the API server: {late}"


def test_chaos_status_conflicts_are_retried_from_fresh_state(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators
) -> None:
    """A concurrent writer bumps the MPIJobs' resourceVersions in a tight loop (one
    patch every 50 ms), so the operator's status writes keep hitting 409 Conflict.

    Found on the way: with no pause at all (a patch of the same job every few
    milliseconds), a job could stay unfinished for minutes, each retry starting from
    an informer cache already behind the writer (the reference operator retries from
    its cache too); a writer at a realistic pace is what is asserted here."""
    ns = full_namespace
    expected, specs = _expected_jobs("conflict", scale(4, 10), random.Random(), 8)
    proc = operators.start(ns)
    wait_leading(proc)
    for obj in specs:
        create_mpijob(full_cluster, ns, obj)
    stop = threading.Event()
    patches = [0]

    def bump() -> None:
        deadline = time.monotonic() + 120
        i = 0
        while not stop.is_set() and time.monotonic() < deadline:
            i += 1
            name = f"conflict-{i % len(specs)}"
            status, _ = full_cluster.request(
                "PATCH",
                f"{MPIJOBS.format(ns=ns)}/{name}",
                {"metadata": {"labels": {"chaos-bump": str(i)}}},
                content_type="application/merge-patch+json",
            )
            if status == 200:
                patches[0] += 1
            stop.wait(0.05)

    writer = threading.Thread(target=bump, daemon=True)
    writer.start()
    try:
        finished = wait_final(full_cluster, ns, expected, timeout=120)
    finally:
        stop.set()
        writer.join(10)
    conflicts = sum("409" in line or "onflict" in line for line in proc.output().splitlines())
    report(
        test="conflicts",
        jobs=len(expected),
        label_patches=patches[0],
        conflicts_logged=conflicts,
        crashes=len(operators.crashes()),
    )
    assert patches[0] > 0
    assert not operators.crashes()
    for name, job in finished.items():
        labels = job["metadata"].get("labels") or {}
        assert "chaos-bump" in labels, name  # the writer's labels were not overwritten
        # The status is complete, not a stale copy: replica counts and start time.
        assert job["status"].get("startTime"), job["status"]
        assert job["status"].get("completionTime"), job["status"]


def test_chaos_throttled_client_loses_nothing(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators
) -> None:
    """One request per second (burst 1): every job still reaches its final state."""
    ns = full_namespace
    expected, specs = _expected_jobs("slow", scale(2, 12), random.Random(), 4)
    proc = operators.start(ns, qps=1, burst=1)
    wait_leading(proc, timeout=90)
    for obj in specs:
        create_mpijob(full_cluster, ns, obj)
    wait_final(full_cluster, ns, expected, timeout=scale(240, 600))
    report(test="throttled", jobs=len(expected), qps=1, crashes=len(operators.crashes()))
    assert not operators.crashes()


def test_chaos_apiserver_outage_mid_run(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators
) -> None:
    """The API server gone for a few seconds while jobs are being created and run:
    refused connections and 5xx while it comes back are retried with backoff."""
    ns = full_namespace
    expected, specs = _expected_jobs("outage", scale(6, 20), random.Random(), 10)
    proc = operators.start(ns, lease=PATIENT_LEASE)
    wait_leading(proc)
    for obj in specs:
        create_mpijob(full_cluster, ns, obj)
    time.sleep(random.uniform(0.5, 3))  # a random fault moment
    full_cluster.stop_apiserver()
    try:
        time.sleep(5)  # the outage itself
    finally:
        full_cluster.start_apiserver()
    back = time.time()
    finished = wait_final(full_cluster, ns, expected, timeout=scale(150, 300))
    lags = [
        _ts(condition(j, expected[n])["lastTransitionTime"])  # type: ignore[index]
        - max(_launcher_finished_at(full_cluster, ns, n), back)
        for n, j in finished.items()
    ]
    report(
        test="outage",
        jobs=len(expected),
        outage_s=5,
        max_status_lag_s=max(lags),
        crashes=len(operators.crashes()),
    )
    assert max(lags) <= STATUS_DEADLINE + 1, lags
    assert not operators.crashes()
