"""The largest pod template the limits accept (64 KiB of small env entries) on a
500-worker job, and a 1-worker job created during its fan-out (issue 46, item 2).

Before the fix each worker pod deep-copied its template and a slow-start batch built
all its pods (up to 252) in one turn of the event loop: seconds without an answer to
anything, the Lease's renewals included. Now pods share what they do not change with
the job and the creates of a batch start one per turn. The small job's pod exists
within 5 s (by the API server's creation times: this process's own polling of the busy
API server lags by seconds), the operator stays responsive throughout (its ``/healthz`` answering time,
polled every 50 ms, stands for the event loop's lag: the operator exposes no lag
metric on this branch), its peak RSS stays under 256 MiB, and the Lease never lapses.

The big job's pods name a scheduler that does not exist: they stay Pending, untouched
by kube-scheduler and KWOK; the point is the operator's cost of making them.
"""

from __future__ import annotations

import statistics
import time
import urllib.parse
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from chaos_support import (
    LEASE_DURATION,
    Operators,
    Sampler,
    api,
    create_mpijob,
    leading,
    list_items,
    report,
    wait_leading,
)
from test_chaos_fanout import LeaseWatch

from devcluster import LocalCluster
from devcluster.sample_jobs import pi_mpijob
from devcluster.testing import OperatorProcess, wait_until
from mpi_operator.api.limits import MAX_TEMPLATE_BYTES
from mpi_operator.api.v2beta1 import parse, set_defaults, validate

WORKERS = 500
QPS = 100  # the operator's default --kube-api-qps
RSS_LIMIT_MIB = 256
JOB_NAME = "training.kubeflow.org/job-name"
SMALL_WORKER = f"{JOB_NAME}=s,training.kubeflow.org/job-role=worker"
BIG_WORKERS = f"{JOB_NAME}=b,training.kubeflow.org/job-role=worker"


def largest_template() -> dict[str, Any]:
    """A worker template of exactly MAX_TEMPLATE_BYTES of JSON, made of small env entries."""
    container: dict[str, Any] = {"name": "w", "image": "x", "env": []}
    template = {"spec": {"schedulerName": "no-such-scheduler", "containers": [container]}}
    env: list[dict[str, str]] = container["env"]
    while len(orjson.dumps(template)) < MAX_TEMPLATE_BYTES - 80:
        env.append({"name": f"E{len(env):05d}", "value": "x"})
    env.append({"name": "PAD", "value": ""})
    env[-1]["value"] = "p" * (MAX_TEMPLATE_BYTES - len(orjson.dumps(template)))
    assert len(orjson.dumps(template)) == MAX_TEMPLATE_BYTES
    return template


def big_job(ns: str) -> dict[str, Any]:
    job = pi_mpijob("b", workers=WORKERS, launcher_exit=None, worker_template=largest_template())
    job["metadata"]["namespace"] = ns
    assert validate(set_defaults(parse(job))) == []  # the largest the limits accept
    return job


def _stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _rss_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {key} in /proc/{pid}/status")


class Responsiveness(Sampler):
    """Polls the operator's /healthz every 50 ms in a thread; keeps each answer's time."""

    interval = 0.05

    def __init__(self, proc: OperatorProcess) -> None:
        super().__init__()
        self.proc = proc
        self.seconds: list[float] = []
        self.failures = 0

    def sample(self) -> None:
        started = time.monotonic()
        try:
            status, _ = self.proc.healthz()
        except OSError:
            status = 0
        self.seconds.append(time.monotonic() - started)
        self.failures += status != 200

    def quantile(self, q: float) -> float:
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _what_happened(cluster: LocalCluster, ns: str) -> str:
    job = api(cluster, "GET", f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/b")
    events = list_items(cluster, f"/api/v1/namespaces/{ns}/events")
    pods = list_items(cluster, f"/api/v1/namespaces/{ns}/pods")
    lines = [f"{e['reason']}: {e['message'][:300]}" for e in events]
    return f"status {job.get('status')}, {len(pods)} pods, events {lines[-10:]}"


def _lag_within(metrics: str, bound: str) -> tuple[float, int]:
    """The share of the event-loop lag samples at or under ``bound`` seconds, and their
    count, from the operator's ``mpi_operator_event_loop_lag_seconds`` histogram."""
    within = total = 0.0
    for line in metrics.splitlines():
        if line.startswith(f'mpi_operator_event_loop_lag_seconds_bucket{{le="{bound}"}}'):
            within = float(line.split()[-1])
        elif line.startswith("mpi_operator_event_loop_lag_seconds_count"):
            total = float(line.split()[-1])
    assert total > 0, "no event-loop lag samples in /metrics"
    return within / total, int(total)


def test_chaos_the_largest_template_on_500_workers_costs_the_operator_little(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators
) -> None:
    ns = full_namespace
    proc = operators.start(ns, qps=QPS, burst=2 * QPS)
    wait_leading(proc)
    pods = f"/api/v1/namespaces/{ns}/pods"

    def all_pods() -> int:
        # remainingItemCount is only given for lists without a selector.
        page = api(full_cluster, "GET", f"{pods}?limit=1")
        return len(page["items"]) + int(page["metadata"].get("remainingItemCount") or 0)

    def big_workers() -> int:
        count, token = 0, ""
        while True:
            query = urllib.parse.urlencode({"labelSelector": BIG_WORKERS, "limit": 100})
            page = api(full_cluster, "GET", f"{pods}?{query}&continue={token}")
            count += len(page["items"])
            token = urllib.parse.quote(page["metadata"].get("continue") or "")
            if not token:
                return count

    rss_before = _rss_kib(proc.pid, "VmRSS")
    with LeaseWatch(full_cluster, ns) as lease, Responsiveness(proc) as health:
        started = time.monotonic()
        create_mpijob(full_cluster, ns, big_job(ns))
        # Past the first batches: the next ones (64, 128, 252) are being built and sent.
        try:
            wait_until(lambda: all_pods() >= 24, 60, "the big job's fan-out", 0.05)
        except TimeoutError:
            raise AssertionError(_what_happened(full_cluster, ns)) from None
        big_at_small, t_small = all_pods(), time.monotonic()
        create_mpijob(full_cluster, ns, pi_mpijob("s", workers=1, launcher_exit=None))
        wait_until(lambda: bool(list_items(full_cluster, pods, SMALL_WORKER)), 60, "s", 0.05)
        small_s = time.monotonic() - t_small
        # Its launcher, its workers, the small job's worker: then count the workers.
        wait_until(lambda: all_pods() >= WORKERS + 2, 120, "the big job's 500 workers", 0.2)
        fan_out_s = time.monotonic() - started
        assert leading(proc)
    # Counted once the sampler stopped: the pages of 500 pods with 64 KiB templates take
    # this process's GIL while they are decoded, which the sampler's thread would time as
    # the operator's answer (the p99 read 0.63 s once, from samples taken then).
    assert big_workers() == WORKERS
    peak_rss_mib = _rss_kib(proc.pid, "VmHWM") / 1024
    metrics = proc.metrics()
    lag_within, lag_samples = _lag_within(metrics, "0.1")
    lag_within_1s, _ = _lag_within(metrics, "1.0")
    # The API server's own times (to the second): this process's polling of a busy API
    # server lags behind (4.6 s observed for a pod made in the job's second).
    small = api(full_cluster, "GET", f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/s")
    small_pod = list_items(full_cluster, pods, SMALL_WORKER)[0]
    created = _stamp(small["metadata"]["creationTimestamp"])
    synced = _stamp(small["status"]["conditions"][0]["lastTransitionTime"])
    pod_made = _stamp(small_pod["metadata"]["creationTimestamp"])
    report(
        test="largest-template-fan-out",
        workers=WORKERS,
        template_bytes=MAX_TEMPLATE_BYTES,
        qps=QPS,
        big_pods_at_small=big_at_small,
        small_pods_s=round(small_s, 2),
        small_first_sync_after_s=synced - created,
        small_pod_after_first_sync_s=pod_made - synced,
        fan_out_s=round(fan_out_s, 1),
        healthz_samples=len(health.seconds),
        healthz_p50_ms=round(1000 * statistics.median(health.seconds), 1),
        healthz_p99_ms=round(1000 * health.quantile(0.99), 1),
        healthz_max_ms=round(1000 * max(health.seconds), 1),
        healthz_failures=health.failures,
        loop_lag_within_100ms=round(lag_within, 4),
        loop_lag_within_1s=round(lag_within_1s, 4),
        loop_lag_samples=lag_samples,
        rss_before_mib=round(rss_before / 1024, 1),
        peak_rss_mib=round(peak_rss_mib, 1),
        lease_renewals=len(lease.renewals),
        lease_longest_gap_s=round(lease.longest_gap(), 2),
    )
    assert pod_made - created <= 5.0
    assert health.failures == 0
    # The answering time includes this process's own HTTP client on two shared cores.
    # Before the fix a 252-pod batch held the loop for whole seconds (6.4 s in the lag
    # histogram below; the Lease lapsed). Now the p99 is 0.03-0.05 s on a quiet machine
    # and 0.13-0.39 s with two CPU burners taking both cores (14 runs), its maximum under
    # 0.71 s: 1 s and 2 s lie between the two with room on either side.
    assert health.quantile(0.99) < 1.0, sorted(health.seconds)[-10:]
    assert max(health.seconds) < 2.0, sorted(health.seconds)[-10:]
    # The operator's own event-loop lag (its histogram, a sample every 250 ms): none past
    # 1 s (before the fix one batch held the loop for 6.4 s), and most under 100 ms:
    # 0.939-0.975 of them with two CPU burners. With about 80 samples on two shared cores
    # one slow sample is 1.3 %, so not p99.
    assert lag_within >= 0.9, (lag_within, lag_samples)
    assert lag_within_1s == 1.0, (lag_within_1s, lag_samples)
    assert peak_rss_mib < RSS_LIMIT_MIB
    # What the fan-out itself cost (before the fix: 172 MiB, deep copies held by a batch).
    assert peak_rss_mib - rss_before / 1024 < RSS_LIMIT_MIB / 2
    assert len(lease.holders) == 1 and len(lease.renewals) >= 2, lease.renewals
    assert lease.longest_gap() < LEASE_DURATION
    assert not operators.crashes() and not operators.tracebacks()
    api(full_cluster, "DELETE", f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/b")
