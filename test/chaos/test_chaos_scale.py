"""Scale limits: pods the API server rejects fail the job fast; a many-worker job
completes (its /metrics scraped back to back all along, every scrape whole and
parseable); many idle MPIJobs leave the operator idle."""

from __future__ import annotations

import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from chaos_support import (
    MPIJOBS,
    Operators,
    condition,
    create_mpijob,
    list_items,
    report,
    scale,
    wait_final,
    wait_leading,
)
from prometheus_client.parser import text_string_to_metric_families

from devcluster import LocalCluster
from devcluster.components import fake_node
from devcluster.sample_jobs import pi_mpijob
from devcluster.testing import OperatorProcess, wait_until

BAD_CONTAINER = {"name": "Not_A_DNS_Label", "image": "mpi-pi"}


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 (1-based) of the whole line.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _syncs(proc: OperatorProcess) -> float:
    return sum(
        float(m.group(1))
        for m in re.finditer(
            r"^mpi_operator_reconcile_duration_seconds_count\{[^}]*\} (\S+)$",
            proc.metrics(),
            re.M,
        )
    )


@pytest.mark.parametrize("replica", ["Worker", "Launcher"])
def test_chaos_pods_the_api_server_rejects_fail_the_job_fast(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators, replica: str
) -> None:
    ns = full_namespace
    proc = operators.start(ns)
    wait_leading(proc)
    obj = pi_mpijob("rejected", launcher_exit=None)
    template = obj["spec"]["mpiReplicaSpecs"][replica]["template"]
    template["spec"]["containers"] = [BAD_CONTAINER]
    create_mpijob(full_cluster, ns, obj)  # the CRD takes it: pod validation does not

    started = time.monotonic()
    job = wait_final(full_cluster, ns, {"rejected": "Failed"}, timeout=30)["rejected"]
    elapsed = time.monotonic() - started
    failed = condition(job, "Failed")
    assert failed is not None
    assert failed["reason"] == "InvalidPodTemplate"
    assert (
        "spec.containers[0].name" in failed["message"]
        or "containers[0].name" in (failed["message"])
    ), failed
    assert "Not_A_DNS_Label" in failed["message"]

    def warnings() -> list[dict[str, Any]]:
        return [
            e
            for e in list_items(full_cluster, f"/api/v1/namespaces/{ns}/events")
            if e["involvedObject"]["name"] == "rejected" and e["type"] == "Warning"
        ]

    # The recorder writes events after the status write, asynchronously (as client-go's).
    try:
        wait_until(
            lambda: any(e["reason"] == "InvalidPodTemplate" for e in warnings()),
            10,
            "the InvalidPodTemplate event",
        )
    except TimeoutError:
        raise AssertionError(warnings()) from None

    # Not retried: the sync count stays put once the job has failed and its live pods
    # are gone (cleanPodPolicy Running deletes a failed launcher's workers; their
    # events bring syncs of their own, which are not retries).
    def pods_settled() -> bool:
        return not [
            p
            for p in list_items(full_cluster, f"/api/v1/namespaces/{ns}/pods")
            if p["status"].get("phase") in ("Pending", "Running")
            or p["metadata"].get("deletionTimestamp")
        ]

    wait_until(pods_settled, 30, "the failed job's live pods gone")
    wait_until(lambda: _syncs(proc) > 0, 10, "metrics")
    before = _syncs(proc)
    time.sleep(5)  # an observation window: nothing should happen in it
    after = _syncs(proc)
    # (A 409 on the first status write, racing the cache, may be retried: fine.)
    retries = sum(
        "sync failed; retrying" in line and ("422" in line or "is invalid" in line)
        for line in proc.output().splitlines()
    )
    report(
        test=f"fail-fast-{replica.lower()}", seconds_to_failed=round(elapsed, 1), retries=retries
    )
    assert after - before <= 1, (before, after)
    assert retries == 0, proc.output()[-3000:]
    assert pods_settled()


def test_chaos_many_worker_job_completes(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators
) -> None:
    ns = full_namespace
    workers = scale(100, 1000)
    if workers + 1 > 4 * 250:  # four fake nodes of 250 pods: one more for the rest
        full_cluster.ensure(fake_node("kwok-node-chaos"))
    proc = operators.start(ns, qps=200, burst=400)
    wait_leading(proc)
    started = time.monotonic()
    with Scraper(proc) as scraper:  # /metrics, scraped all along the fan-out
        create_mpijob(
            full_cluster,
            ns,
            pi_mpijob(
                "wide", workers=workers, complete_after="5s", creation_policy="WaitForWorkersReady"
            ),
        )
        job = wait_final(full_cluster, ns, {"wide": "Succeeded"}, timeout=scale(300, 900))["wide"]
    elapsed = time.monotonic() - started
    report(
        test="wide-job",
        workers=workers,
        seconds=round(elapsed, 1),
        metrics_scrapes=scraper.scrapes,
        bad_scrapes=len(scraper.failures),
    )
    assert job["status"]["replicaStatuses"]["Launcher"] == {"succeeded": 1}
    assert not operators.crashes()
    assert scraper.failures == [], scraper.failures[:5]
    assert scraper.scrapes >= 20, scraper.scrapes


class Scraper:
    """Scrapes the operator's /metrics back to back in a thread; every answer must be
    200 and parse (prometheus_client's text parser) with the work queue's series."""

    def __init__(self, proc: OperatorProcess) -> None:
        self.proc = proc
        self.scrapes = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="scraper")

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                names = {f.name for f in text_string_to_metric_families(self.proc.metrics())}
                if "workqueue_unfinished_work_seconds" not in names:
                    self.failures.append(f"no workqueue series in {sorted(names)[:10]}")
            except Exception as err:
                self.failures.append(repr(err))
            self.scrapes += 1
            self._stop.wait(0.05)


def test_chaos_idle_mpijobs_leave_the_operator_idle(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators
) -> None:
    ns = full_namespace
    count = scale(200, 1000)
    proc = operators.start(
        ns,
        "--controller-queue-rate-limit=500",
        "--controller-queue-burst=1000",
        qps=500,
        burst=1000,
    )
    wait_leading(proc)
    started = time.monotonic()

    def create(i: int) -> None:
        obj = pi_mpijob(f"idle-{i}", workers=1, launcher_exit=None)
        obj["spec"]["runPolicy"]["suspend"] = True
        create_mpijob(full_cluster, ns, obj)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(count)))
    created = time.monotonic() - started

    def settled() -> bool:
        jobs = list_items(full_cluster, MPIJOBS.format(ns=ns))
        return len(jobs) == count and all(condition(j, "Suspended") for j in jobs)

    wait_until(settled, scale(180, 600), "every idle MPIJob Suspended", 2.0)
    # Quiet: no sync for 3 s in a row.
    last = [_syncs(proc), time.monotonic()]

    def quiet() -> bool:
        now = _syncs(proc)
        if now != last[0]:
            last[:] = [now, time.monotonic()]
        return time.monotonic() - last[1] >= 3

    wait_until(quiet, 120, "the operator to go quiet", 0.5)
    settled_at = time.monotonic()
    window = 20.0
    cpu0, syncs0 = _cpu_seconds(proc.pid), _syncs(proc)
    time.sleep(window)  # the idle measurement window
    cpu, syncs = _cpu_seconds(proc.pid) - cpu0, _syncs(proc) - syncs0
    report(
        test="idle",
        mpijobs=count,
        create_s=round(created, 1),
        settle_s=round(settled_at - started, 1),
        window_s=window,
        cpu_s=round(cpu, 2),
        syncs=syncs,
    )
    assert cpu <= 0.05 * window, f"{cpu:.2f} CPU seconds in {window}s idle with {count} MPIJobs"
    assert syncs == 0
