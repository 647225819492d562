"""The least time any operator can take for a RestartFailed restart on this cluster: the
same API actions done by a bare script, with no operator and no reaction time.

A running Job (the old launcher) and a failed pod (the failed worker) exist; at t=0
the script deletes the Job in the foreground and the pod, at once. The pod is created
again as soon as the old one is gone and waited for until Ready; the Job is created
again with the same name once the old one is gone and the new pod is Ready, and waited
for until its pod runs. Requests are paced at the operator's client QPS (they are far
fewer than a second's worth, so the pacing never waits).
"""

from __future__ import annotations

import threading
import time
from functools import partial
from typing import Any

from timeline import Timeline

from devcluster import LocalCluster
from devcluster.testing import wait_until

Obj = dict[str, Any]
LABEL = "restart-ceiling"


class Paced:
    """The cluster's admin calls, at most ``qps`` a second (burst ``2 * qps``)."""

    def __init__(self, cluster: LocalCluster, qps: float) -> None:
        self.cluster = cluster
        self.qps = qps
        self.tokens = 2 * qps
        self.at = time.monotonic()
        self.lock = threading.Lock()

    def __call__(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        with self.lock:
            now = time.monotonic()
            self.tokens = min(2 * self.qps, self.tokens + (now - self.at) * self.qps)
            self.at = now
            self.tokens -= 1
            wait = -self.tokens / self.qps if self.tokens < 0 else 0.0
        if wait:
            time.sleep(wait)
        return self.cluster.request(method, path, body)


def _pod(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {LABEL: name}},
        "spec": {"containers": [{"name": "worker", "image": "mpi-pi"}]},
    }


def _job(name: str) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {LABEL: name}},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {LABEL: name}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "launcher", "image": "mpi-pi", "command": ["x"]}],
                },
            },
        },
    }


def _ready(obj: Obj) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _ok(answer: tuple[int, Any]) -> Any:
    status, body = answer
    assert 200 <= status < 300, answer
    return body


def measure_ceiling(
    cluster: LocalCluster, ns: str, qps: float, failed_status: Obj, run: int = 0
) -> dict[str, float]:
    """Seconds from t=0 to each step (see the module's docstring); the worker is given
    ``failed_status`` first."""
    call = Paced(cluster, qps)
    pods, jobs = f"/api/v1/namespaces/{ns}/pods", f"/apis/batch/v1/namespaces/{ns}/jobs"
    pod, job = f"ceiling{run}-worker-0", f"ceiling{run}-launcher"
    _ok(call("POST", pods, _pod(pod)))
    _ok(call("POST", jobs, _job(job)))

    def running_job_pod() -> bool:
        status, body = cluster.request("GET", f"{pods}?labelSelector={LABEL}%3D{job}")
        items = body["items"] if status == 200 else []
        return any((p.get("status") or {}).get("phase") == "Running" for p in items)

    def ready_pod() -> bool:
        status, body = cluster.request("GET", f"{pods}/{pod}")
        return status == 200 and _ready(body)

    wait_until(running_job_pod, 60, "the old launcher's pod Running", 0.2)
    wait_until(ready_pod, 60, "the old worker Ready", 0.2)
    old_uid = cluster.request("GET", f"{pods}/{pod}")[1]["metadata"]["uid"]
    # The worker fails (as in the operator's test): a pod that ended is deleted at once.
    failed = {"status": failed_status}
    merge = "application/merge-patch+json"
    _ok(cluster.request("PATCH", f"{pods}/{pod}/status", failed, content_type=merge))

    def followed(obj: Obj) -> bool:
        return str(obj["metadata"].get("name") or "").startswith(f"ceiling{run}-")

    steps: dict[str, float] = {}
    with Timeline(cluster, [pods, jobs], followed) as timeline:
        t0 = time.monotonic()

        def seen(what: Any) -> float | None:
            return timeline.first(t0, what)

        def worker() -> None:
            _ok(call("DELETE", f"{pods}/{pod}"))
            gone = partial(seen, lambda t, o: o["metadata"]["uid"] == old_uid and t == "DELETED")
            steps["worker_gone"] = wait_until(gone, 60, "the old worker gone", 0.005)
            _ok(call("POST", pods, _pod(pod)))
            steps["worker_created"] = time.monotonic() - t0
            recreated = 0

            def ready() -> float | None:
                # Gone again: made again, as a level-triggered sync would. (Unpatched,
                # KWOK v0.8.0 deleted the old pod a second time by name, and so the new
                # one; hack/tools/kwok/delete-by-uid.patch makes it delete by uid.)
                nonlocal recreated
                status, body = cluster.request("GET", f"{pods}/{pod}")
                if status == 404:
                    recreated += 1
                    call("POST", pods, _pod(pod))
                    return None
                return time.monotonic() - t0 if status == 200 and _ready(body) else None

            steps["worker_ready"] = wait_until(ready, 60, "the new worker Ready", 0.005)
            steps["worker_recreated"] = recreated

        thread = threading.Thread(target=worker)
        thread.start()
        body = {"propagationPolicy": "Foreground"}
        _ok(call("DELETE", f"{jobs}/{job}", body))
        job_gone = partial(
            seen,
            lambda t, o: o["kind"] == "Job" and o["metadata"]["name"] == job and t == "DELETED",
        )
        steps["launcher_gone"] = wait_until(job_gone, 60, "the old launcher Job gone", 0.005)
        thread.join(60)
        _ok(call("POST", jobs, _job(job)))
        steps["launcher_created"] = time.monotonic() - t0
        steps["launcher_pod_running"] = wait_until(
            lambda: _new_job_pod_running(cluster, pods, job, t0), 60, "the new launcher's pod", 0.02
        )
    _ok(call("DELETE", f"{jobs}/{job}", {"propagationPolicy": "Background"}))
    call("DELETE", f"{pods}/{pod}")  # KWOK may have deleted it again (see above)
    return {step: round(at, 3) for step, at in steps.items()}


def _new_job_pod_running(cluster: LocalCluster, pods: str, job: str, t0: float) -> float | None:
    status, body = cluster.request("GET", f"{pods}?labelSelector={LABEL}%3D{job}")
    items = body["items"] if status == 200 else []
    if any((p.get("status") or {}).get("phase") == "Running" for p in items):
        return time.monotonic() - t0
    return None
