"""The raw ceilings: what a plain client does with no operator in between.

* :func:`raw_ceiling`: the fan-out's worker-shaped pods created at the operators'
  client QPS/burst; no operator can create them sooner.
* :func:`raw_throughput`: the throughput's MPIJobs submitted as for the operators,
  and each one's children (the ones our builders make: Service, ConfigMap, Secret,
  workers, launcher Job) created once its create is acknowledged, at the same
  QPS/burst: an operator with no latency and no CPU of its own, which writes no status
  (fewer requests than any real one). How many jobs' children it has in flight at
  once is its pace (``lanes``); the pace decides how soon the pods are Ready, because
  the control plane, not the client, is the slow part here.
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from devcluster import LocalCluster
from mpi_operator.api.v2beta1 import MPIJob
from mpi_operator.api.v2beta1.defaults import set_defaults
from mpi_operator.builders.kubeflow.config import new_config_map
from mpi_operator.builders.kubeflow.launcher import new_launcher_job
from mpi_operator.builders.kubeflow.secret import new_ssh_auth_secret
from mpi_operator.builders.kubeflow.service import new_job_service
from mpi_operator.builders.kubeflow.worker import new_worker, worker_replicas

from . import kube
from .job_times import percentile, step_medians, step_times


def raw_ceiling(
    cluster: LocalCluster, ns: str, workers: int, qps: int, burst: int, threads: int = 32
) -> dict[str, Any]:
    """The same number of worker-shaped pods created by a plain concurrent client at
    the same client QPS/burst: seconds until every pod exists (seen by the watch)."""
    pods = kube.Watch(cluster, kube.PODS.format(ns=ns), f"{kube.JOB_ROLE_LABEL}=worker").start()
    try:
        client = kube.RawClient(cluster, threads=threads, qps=qps, burst=burst)
        path = kube.PODS.format(ns=ns)
        items = [(path, kube.worker_like_pod(f"raw-worker-{i}", "raw")) for i in range(workers)]
        t0 = time.monotonic()
        acks = client.create_all(items)
        pods.wait(lambda: len(pods.first_seen) >= workers, 120, f"{workers} raw pods seen")
        return {
            "all_pods_created_s": max(pods.first_seen.values()) - t0,
            "acknowledged_s": max(acks) - t0,
        }
    finally:
        pods.stop()


def children(stored: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) of every child an operator creates for the stored
    MPIJob ``stored`` before its pods can run, in the order ours sends them."""
    job = set_defaults(MPIJob.from_dict(stored))
    ns = job.namespace
    workers = worker_replicas(job)
    core = f"/api/v1/namespaces/{ns}"
    return [
        (f"{core}/services", new_job_service(job)),
        (f"{core}/configmaps", new_config_map(job, workers)),
        (f"{core}/secrets", new_ssh_auth_secret(job)),
        *((f"{core}/pods", new_worker(job, i)) for i in range(workers)),
        (f"/apis/batch/v1/namespaces/{ns}/jobs", new_launcher_job(job).job),
    ]


def raw_throughput(
    cluster: LocalCluster,
    ns: str,
    jobs_n: int,
    workers: int,
    launcher_seconds: float,
    qps: int,
    burst: int,
    timeout: float,
    submit_threads: int = 16,
    threads: int = 32,
    lanes: int = 0,
) -> dict[str, Any]:
    """``jobs_n`` MPIJobs submitted at once as in the throughput scenario, and each
    one's children created by a plain client as soon as its create is acknowledged:
    per job, seconds from that acknowledgement until all its pods are Ready.

    ``lanes``: at most that many jobs' children in flight at once, each job's all
    together (an operator of that many sync workers that takes no time itself);
    0: every job's as soon as it is acknowledged."""
    pods = kube.Watch(cluster, kube.PODS.format(ns=ns), kube.JOB_NAME_LABEL).start()
    per_job = workers + 1
    cpu0 = time.process_time()
    try:
        submit = kube.RawClient(cluster, threads=submit_threads)  # unthrottled: "at once"
        client = kube.RawClient(cluster, threads=threads, qps=qps, burst=burst)
        path = kube.MPIJOBS.format(ns=ns)
        names = [f"job-{i:04d}" for i in range(jobs_n)]
        with (
            ThreadPoolExecutor(threads) as creates,
            ThreadPoolExecutor(lanes or max(jobs_n, 1)) as lane_pool,
        ):

            def create_children(stored: dict[str, Any]) -> list[dict[str, Any]]:
                sent = [creates.submit(client.create, p, o) for p, o in children(stored)]
                return [f.result() for f in sent]

            def submit_one(name: str) -> tuple[float, Future[list[dict[str, Any]]]]:
                stored = submit.create(path, kube.mpijob(name, workers, launcher_seconds))
                return time.monotonic(), lane_pool.submit(create_children, stored)

            t0 = time.monotonic()
            with ThreadPoolExecutor(submit_threads) as submitters:
                submitted = list(submitters.map(submit_one, names))
            for _, job_children in submitted:
                job_children.result()
        t_children = time.monotonic() - t0
        created = {n: acked for n, (acked, _) in zip(names, submitted, strict=True)}

        def all_ready() -> bool:
            ready = sum(1 for (_, c) in pods.conditions if c == "Ready")
            return ready >= jobs_n * per_job

        pods.wait(all_ready, timeout, f"the pods of {jobs_n} MPIJobs Ready")
        steps = step_times(pods, per_job)
        to_ready = [steps["ready"][n] - created[n] for n in names]
        return {
            "submitted_s": max(created.values()) - t0,
            "children_acknowledged_s": t_children,
            # The whole harness's CPU (its watches too): not comparable to an operator's.
            "harness_cpu_s": time.process_time() - cpu0,
            "create_to_pods_ready_p50_s": statistics.median(to_ready),
            "create_to_pods_ready_p99_s": percentile(to_ready, 99),
            **step_medians(steps, created),
        }
    finally:
        pods.stop()
