"""A restart's timeline: watches a namespace's pods, Jobs and MPIJobs from a thread and
records when each step of a restart was seen (the watch events' arrival, on this
process's monotonic clock), for the chaos tests that break a restart's time down."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from devcluster import LocalCluster

Obj = dict[str, Any]
ATTEMPT = "training.kubeflow.org/restart-attempt"


def _ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _restarting(job: Obj) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Restarting" and c.get("status") == "True" for c in conditions)


class Timeline:
    """Watches ``paths`` (collection paths in one namespace) while in its ``with``;
    ``keep`` picks the objects whose events are recorded. :meth:`first` answers when a
    predicate first held for an object's event."""

    def __init__(
        self, cluster: LocalCluster, paths: list[str], keep: Callable[[Obj], bool]
    ) -> None:
        self.cluster = cluster
        self.paths = paths
        self.keep = keep
        self.events: list[tuple[float, str, Obj]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._responses: list[Any] = []

    def __enter__(self) -> Timeline:
        for path in self.paths:
            status, body = self.cluster.request("GET", f"{path}?limit=1")
            assert status == 200, (path, status, body)
            rv = body["metadata"]["resourceVersion"]
            query = urllib.parse.urlencode(
                {"watch": "1", "resourceVersion": rv, "timeoutSeconds": "600"}
            )
            req = urllib.request.Request(f"{self.cluster.server}{path}?{query}")
            response = urllib.request.urlopen(req, context=self.cluster.ssl_context(), timeout=600)
            self._responses.append(response)
            thread = threading.Thread(target=self._follow, args=(response,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for response in self._responses:
            # Closing the response would wait for the thread reading it; shutting its
            # socket down ends that read at once.
            with contextlib.suppress(Exception):
                response.fp.raw._sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(10)
        for response in self._responses:
            with contextlib.suppress(Exception):
                response.close()

    def _follow(self, response: Any) -> None:
        try:
            for line in response:
                if self._stop.is_set():
                    return
                event = json.loads(line)
                obj = event.get("object") or {}
                if obj.get("kind") == "Status" or not self.keep(obj):
                    continue
                with self._lock:
                    self.events.append((time.monotonic(), str(event.get("type")), obj))
        except Exception:  # the stream ends when the test closes it
            return

    def first(self, since: float, what: Callable[[str, Obj], bool]) -> float | None:
        """Seconds from ``since`` to the first recorded event for which ``what`` holds."""
        with self._lock:
            events = list(self.events)
        for at, kind, obj in events:
            if at >= since and what(kind, obj):
                return at - since
        return None


def restart_steps(timeline: Timeline, since: float, job: str, old_worker_uid: str) -> Obj:
    """The steps of a restart of ``job`` whose ``{job}-worker-0`` (uid
    ``old_worker_uid``) failed at ``since``, each as seconds from the failure."""
    worker, launcher = f"{job}-worker-0", f"{job}-launcher"

    def name(obj: Obj) -> str:
        return str(obj["metadata"].get("name") or "")

    def uid(obj: Obj) -> str:
        return str(obj["metadata"].get("uid") or "")

    def kind_of(obj: Obj) -> str:
        return str(obj.get("kind") or "")

    def attempt(obj: Obj) -> str:
        return str((obj["metadata"].get("labels") or {}).get(ATTEMPT) or "")

    def old_launcher_pod(obj: Obj) -> bool:
        return kind_of(obj) == "Pod" and name(obj).startswith(launcher) and attempt(obj) != "1"

    def new_launcher_pod(obj: Obj) -> bool:
        return kind_of(obj) == "Pod" and name(obj).startswith(launcher) and attempt(obj) == "1"

    def new_worker(obj: Obj) -> bool:
        return kind_of(obj) == "Pod" and name(obj) == worker and uid(obj) != old_worker_uid

    def old_launcher_job(obj: Obj) -> bool:
        return kind_of(obj) == "Job" and name(obj) == launcher and attempt(obj) != "1"

    checks: dict[str, Callable[[str, Obj], bool]] = {
        "failed_seen": lambda t, o: (
            uid(o) == old_worker_uid and (o.get("status") or {}).get("phase") == "Failed"
        ),
        "restarting_written": lambda t, o: kind_of(o) == "MPIJob" and _restarting(o),
        "worker_delete_sent": lambda t, o: (
            uid(o) == old_worker_uid and bool(o["metadata"].get("deletionTimestamp"))
        ),
        "launcher_delete_sent": lambda t, o: (
            old_launcher_job(o) and bool(o["metadata"].get("deletionTimestamp"))
        ),
        "old_worker_gone": lambda t, o: uid(o) == old_worker_uid and t == "DELETED",
        "old_launcher_pod_gone": lambda t, o: old_launcher_pod(o) and t == "DELETED",
        "old_launcher_job_gone": lambda t, o: old_launcher_job(o) and t == "DELETED",
        "worker_created": lambda t, o: new_worker(o) and t == "ADDED",
        "worker_ready": lambda t, o: new_worker(o) and _ready(o),
        "launcher_created": lambda t, o: (
            kind_of(o) == "Job" and name(o) == launcher and attempt(o) == "1" and t == "ADDED"
        ),
        "launcher_pod_created": lambda t, o: new_launcher_pod(o) and t == "ADDED",
        "launcher_pod_running": lambda t, o: (
            new_launcher_pod(o) and (o.get("status") or {}).get("phase") == "Running"
        ),
    }
    found = {step: timeline.first(since, check) for step, check in checks.items()}
    return {step: None if at is None else round(at, 3) for step, at in found.items()}
