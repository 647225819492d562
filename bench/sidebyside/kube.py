"""Small synchronous Kubernetes helpers for the harness (as the admin user, not audited).

* :class:`Watch`: a background watch of one collection that timestamps, on the
  harness's monotonic clock, when each object was first seen and when each MPIJob
  condition first became True - the timings of the scenarios.
* :class:`RawClient`: a plain concurrent client (a thread pool over keep-alive
  connections) with a client-go-like token bucket, for the raw ceiling and for
  creating the 5,000 unrelated pods.
* Object builders: MPIJobs and pods.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from devcluster import COMPLETE_AFTER, LocalCluster

MPIJOBS = "/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs"
PODS = "/api/v1/namespaces/{ns}/pods"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
IMAGE = "mpioperator/mpi-pi:openmpi"
UNSCHEDULED = "bench-nobody"  # a schedulerName nobody serves: those pods stay Pending


def _connection(cluster: LocalCluster, timeout: float | None) -> http.client.HTTPSConnection:
    parsed = urllib.parse.urlsplit(cluster.server)
    return http.client.HTTPSConnection(
        parsed.hostname or "127.0.0.1",
        parsed.port,
        context=cluster.ssl_context(),
        timeout=timeout,
    )


class Watch:
    """Watches ``path`` (a collection) in a thread from the time :meth:`start` returns."""

    def __init__(self, cluster: LocalCluster, path: str, label_selector: str = "") -> None:
        self.cluster = cluster
        self.path = path
        self.label_selector = label_selector
        self.first_seen: dict[str, float] = {}
        #: name -> the labels the object had when first seen.
        self.labels: dict[str, dict[str, str]] = {}
        #: (name, condition type) -> monotonic time it was first seen True.
        self.conditions: dict[tuple[str, str], float] = {}
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self._stop = threading.Event()
        self._conn: http.client.HTTPSConnection | None = None
        self._thread: threading.Thread | None = None
        self._rv = ""
        self.error: BaseException | None = None

    def start(self) -> Watch:
        status, body = self.cluster.request("GET", self._url(watch=False))
        if status != 200:
            raise RuntimeError(f"list {self.path}: {status} {body}")
        self._rv = body["metadata"]["resourceVersion"]
        now = time.monotonic()
        for obj in body.get("items", []):
            self._observe(obj, now)
        resp = self._open()  # registered on the server once the headers arrive
        self._thread = threading.Thread(target=self._run, args=(resp,), daemon=True)
        self._thread.start()
        return self

    def _url(self, watch: bool) -> str:
        q: dict[str, str] = {}
        if self.label_selector:
            q["labelSelector"] = self.label_selector
        if watch:
            q.update(watch="1", resourceVersion=self._rv, timeoutSeconds="3600")
        return self.path + ("?" + urllib.parse.urlencode(q) if q else "")

    def _open(self) -> http.client.HTTPResponse:
        conn = _connection(self.cluster, None)
        conn.request("GET", self._url(watch=True), headers={"Accept": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"watch {self.path}: {resp.status} {resp.read()[:300]!r}")
        self._conn = conn
        return resp

    def _run(self, resp: http.client.HTTPResponse) -> None:
        try:
            while not self._stop.is_set():
                line = resp.readline()
                if not line:  # server closed the watch: resume from the last version
                    if self._stop.is_set():
                        return
                    resp = self._open()
                    continue
                ev = json.loads(line)
                obj = ev.get("object", {})
                if ev.get("type") == "ERROR":
                    raise RuntimeError(f"watch {self.path}: {obj}")
                self._rv = obj.get("metadata", {}).get("resourceVersion", self._rv)
                if ev.get("type") in ("ADDED", "MODIFIED"):
                    self._observe(obj, time.monotonic())
        except BaseException as e:
            if not self._stop.is_set():
                self.error = e
                with self.changed:
                    self.changed.notify_all()

    def _observe(self, obj: dict[str, Any], now: float) -> None:
        name = obj["metadata"]["name"]
        with self.changed:
            self.first_seen.setdefault(name, now)
            self.labels.setdefault(name, obj["metadata"].get("labels") or {})
            for c in obj.get("status", {}).get("conditions") or []:
                if c.get("status") == "True":
                    self.conditions.setdefault((name, c["type"]), now)
            self.changed.notify_all()

    def wait(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        """Block until ``predicate()`` (called under the lock) holds; TimeoutError after."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate():
                if self.error is not None:
                    raise RuntimeError(f"watch {self.path} failed: {self.error}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
                self.changed.wait(min(left, 1.0))

    def with_condition(self, ctype: str) -> dict[str, float]:
        with self.lock:
            return {n: t for (n, c), t in self.conditions.items() if c == ctype}

    def stop(self) -> None:
        self._stop.set()
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(Exception):
                if conn.sock is not None:
                    conn.sock.shutdown(2)
            with contextlib.suppress(Exception):
                conn.close()
        if self._thread is not None:
            self._thread.join(timeout=5)


class TokenBucket:
    """client-go's flowcontrol token bucket: ``qps`` tokens a second, ``burst`` at most."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = burst
        self.tokens = float(burst)
        self.last = time.monotonic()
        self.lock = threading.Lock()

    def take(self) -> None:
        if self.qps <= 0:
            return
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.qps)
            self.last = now
            self.tokens -= 1
            wait = -self.tokens / self.qps if self.tokens < 0 else 0.0
        if wait > 0:
            time.sleep(wait)  # rate limiting, not synchronisation


class RawClient:
    """POSTs objects concurrently over ``threads`` keep-alive connections."""

    def __init__(
        self, cluster: LocalCluster, threads: int = 32, qps: float = 0, burst: int = 1
    ) -> None:
        self.cluster = cluster
        self.threads = threads
        self.bucket = TokenBucket(qps, burst)
        self._local = threading.local()

    def _post(self, path: str, obj: dict[str, Any]) -> tuple[int, bytes]:
        self.bucket.take()
        body = json.dumps(obj).encode()
        for attempt in range(3):
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = _connection(self.cluster, 60)
            try:
                conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
                continue
            if resp.status not in (200, 201, 409):
                raise RuntimeError(f"POST {path}: {resp.status} {data[:300]!r}")
            return resp.status, data
        raise AssertionError("unreachable")

    def create(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        """POST one object (in the caller's thread); the object the server stored.

        A 409 after a retried request is our own first attempt: read it back."""
        status, data = self._post(path, obj)
        if status == 409:
            got, body = self.cluster.request("GET", f"{path}/{obj['metadata']['name']}")
            if got != 200:
                raise RuntimeError(f"GET {path}/{obj['metadata']['name']}: {got} {body}")
            return dict(body)
        return dict(json.loads(data))

    def _post_timed(self, path: str, obj: dict[str, Any]) -> float:
        self._post(path, obj)
        return time.monotonic()

    def create_all(self, items: Iterable[tuple[str, dict[str, Any]]]) -> list[float]:
        """Create every (collection path, object) concurrently; return, per item in
        order, the monotonic time its creation was acknowledged."""
        with ThreadPoolExecutor(self.threads) as pool:
            futures = [pool.submit(self._post_timed, p, o) for p, o in items]
            return [f.result() for f in futures]


# ---- objects --------------------------------------------------------------------------


def mpijob(name: str, workers: int, launcher_seconds: float | None) -> dict[str, Any]:
    """An MPIJob of ``workers`` workers; its launcher completes after ``launcher_seconds``
    (KWOK annotation), or runs until deleted when None."""
    launcher_meta: dict[str, Any] = {}
    if launcher_seconds is not None:
        launcher_meta["annotations"] = {COMPLETE_AFTER: f"{launcher_seconds:g}s"}
    container = {"image": IMAGE, "resources": {"limits": {"cpu": "10m", "memory": "16Mi"}}}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {
                        "metadata": launcher_meta,
                        "spec": {
                            "containers": [
                                {**container, "name": "launcher", "command": ["mpirun", "pi"]}
                            ]
                        },
                    },
                },
                "Worker": {
                    "replicas": workers,
                    "template": {
                        "spec": {
                            "containers": [
                                {**container, "name": "worker", "command": ["/usr/sbin/sshd"]}
                            ]
                        }
                    },
                },
            },
        },
    }


def worker_like_pod(name: str, job: str) -> dict[str, Any]:
    """A pod shaped like an operator's worker pod, for the raw ceiling."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {
                JOB_NAME_LABEL: job,
                JOB_ROLE_LABEL: "worker",
                "training.kubeflow.org/operator-name": "mpi-operator",
            },
        },
        "spec": {
            "hostname": name,
            "subdomain": job,
            "containers": [
                {
                    "name": "worker",
                    "image": IMAGE,
                    "command": ["/usr/sbin/sshd"],
                    "resources": {"limits": {"cpu": "10m", "memory": "16Mi"}},
                    "env": [{"name": "K_MPI_JOB_ROLE", "value": "worker"}],
                }
            ],
        },
    }


def unrelated_pod(name: str) -> dict[str, Any]:
    """A pod no operator cares about; served by no scheduler, so it stays Pending."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "unrelated", "bench": "memory"}},
        "spec": {
            "schedulerName": UNSCHEDULED,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "env": [{"name": f"VAR_{i}", "value": "x" * 32} for i in range(4)],
                    "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}},
                }
            ],
        },
    }
