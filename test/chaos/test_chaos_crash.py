"""Crash anywhere: the operator SIGKILLed at random moments while MPIJobs are in flight."""

from __future__ import annotations

import random
import signal
import time

from chaos_support import (
    LEASE_DURATION,
    Operators,
    create_mpijob,
    delete_all_and_check_no_orphans,
    report,
    scale,
    wait_final,
)
from duplicate_watch import Watcher

from devcluster import LocalCluster
from devcluster.sample_jobs import pi_mpijob


def test_chaos_sigkill_at_random_moments_loses_and_duplicates_nothing(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators
) -> None:
    ns = full_namespace
    jobs, kills = scale(20, 100), scale(5, 20)
    rng = random.Random(int(time.time()))
    expected: dict[str, str] = {}
    specs = []
    for i in range(jobs):
        name = f"crash-{i}"
        exit_code = 1 if i % 3 == 0 else 0
        expected[name] = "Failed" if exit_code else "Succeeded"
        specs.append(
            pi_mpijob(
                name,
                workers=1 + i % 3,
                launcher_exit=exit_code,
                complete_after=f"{rng.randint(2, 15)}s",
                creation_policy="WaitForWorkersReady" if i % 2 else None,
            )
        )

    with (
        Watcher(full_cluster, f"/api/v1/namespaces/{ns}/pods", pods=True) as pods,
        Watcher(full_cluster, f"/apis/batch/v1/namespaces/{ns}/jobs") as launchers,
    ):
        proc = operators.start(ns)
        # The jobs arrive while the operator is being killed: a third before the
        # first kill, the rest spread between kills.
        batches = [specs[i :: kills + 1] for i in range(kills + 1)]
        for obj in batches[0]:
            create_mpijob(full_cluster, ns, obj)
        for k in range(kills):
            # Random moments: during start-up, cache sync, waiting for the lease
            # (held by the killed one for LEASE_DURATION), or in the middle of syncs.
            time.sleep(rng.uniform(0.2, LEASE_DURATION + 4))  # a random kill moment
            proc.signal(signal.SIGKILL)
            proc.wait(10)
            for obj in batches[k + 1]:
                create_mpijob(full_cluster, ns, obj)
            proc = operators.start(ns)

        finished = wait_final(full_cluster, ns, expected, timeout=scale(240, 600))
        pod_names, job_names = pods.names(), launchers.names()
        duplicates = pods.record.duplicates + launchers.record.duplicates

    recreated_workers = {n: u for n, u in pod_names.items() if "-worker-" in n and len(u) > 1}
    recreated_launchers = {n: u for n, u in job_names.items() if len(u) > 1}
    crashes = operators.crashes() + operators.tracebacks()
    report(
        test="crash",
        jobs=jobs,
        sigkills=kills,
        operator_starts=len(operators.procs),
        pods_seen=len(pod_names),
        duplicates=len(duplicates),
        recreated_workers=len(recreated_workers),
        launcher_jobs_created_twice=len(recreated_launchers),
        crashes=len(crashes),
    )
    assert not duplicates, duplicates
    assert not recreated_workers, recreated_workers
    assert not recreated_launchers, recreated_launchers
    assert set(job_names) == {f"{n}-launcher" for n in expected}
    assert not crashes, crashes
    for name, job in finished.items():
        assert job["status"]["replicaStatuses"]["Launcher"] == (
            {"succeeded": 1} if expected[name] == "Succeeded" else {"failed": 1}
        ), (name, job["status"])

    operators.collect_secrets()
    delete_all_and_check_no_orphans(full_cluster, ns)
