"""A raw watch that records every object of one collection and flags duplicates: the
chaos tests' witness that no fault made the operator run a worker or launcher twice."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from chaos_support import JOB_NAME_LABEL, JOB_ROLE_LABEL, REPLICA_INDEX_LABEL, Obj

from devcluster import LocalCluster


@dataclass
class Record:
    uids: dict[str, set[str]] = field(default_factory=dict)  # name -> every uid seen
    alive: dict[str, Obj] = field(default_factory=dict)  # uid -> latest object
    duplicates: list[str] = field(default_factory=list)
    events: int = 0
    relists: int = 0


def _pod_alive(obj: Obj) -> bool:
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return (obj.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


class Watcher:
    """Records every object of one collection, from a raw watch resumed on every
    disconnect (relisting after 410 Gone), and flags duplicates as they appear:

    * two different uids alive at once with the same name;
    * (pods) two alive pods with the same ``job-name`` + ``replica-index`` labels.
    """

    def __init__(self, cluster: LocalCluster, path: str, *, pods: bool = False) -> None:
        self.cluster = cluster
        self.path = path
        self.pods = pods
        self.record = Record()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._rv = ""
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"watch {path}")
        self._ready = threading.Event()

    def __enter__(self) -> Watcher:
        self._thread.start()
        if not self._ready.wait(60):
            raise RuntimeError(f"watch of {self.path} did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def names(self) -> dict[str, set[str]]:
        with self._lock:
            return {k: set(v) for k, v in self.record.uids.items()}

    def _alive(self, obj: Obj) -> bool:
        return _pod_alive(obj) if self.pods else not obj["metadata"].get("deletionTimestamp")

    def _observe(self, kind: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        uid, name = meta.get("uid"), meta.get("name")
        if not uid or not name:
            return
        rec = self.record
        rec.events += 1
        rec.uids.setdefault(name, set()).add(uid)
        if kind == "DELETED" or not self._alive(obj):
            rec.alive.pop(uid, None)
            return
        rec.alive[uid] = obj
        for other_uid, other in rec.alive.items():
            if other_uid == uid:
                continue
            om = other["metadata"]
            if om["name"] == name:
                rec.duplicates.append(f"{name}: uids {other_uid} and {uid} alive at once")
            if self.pods:
                labels, olabels = meta.get("labels") or {}, om.get("labels") or {}
                key = (labels.get(JOB_NAME_LABEL), labels.get(REPLICA_INDEX_LABEL))
                okey = (olabels.get(JOB_NAME_LABEL), olabels.get(REPLICA_INDEX_LABEL))
                if key[1] is not None and key == okey and labels.get(JOB_ROLE_LABEL) == "worker":
                    rec.duplicates.append(f"{key}: pods {om['name']} and {name} alive at once")

    def _relist(self) -> None:
        status, body = self.cluster.request("GET", self.path)
        if status != 200:
            raise OSError(f"list {self.path}: {status}")
        with self._lock:
            self.record.relists += 1
            seen = set()
            for obj in body["items"]:
                seen.add(obj["metadata"]["uid"])
                self._observe("ADDED", obj)
            for uid in list(self.record.alive):
                if uid not in seen:
                    self.record.alive.pop(uid)
        self._rv = body["metadata"]["resourceVersion"]

    def _watch_once(self) -> None:
        query = urllib.parse.urlencode(
            {
                "watch": "1",
                "resourceVersion": self._rv,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "30",
            }
        )
        req = urllib.request.Request(f"{self.cluster.server}{self.path}?{query}")
        with urllib.request.urlopen(req, context=self.cluster.ssl_context(), timeout=40) as resp:
            for line in resp:
                if self._stop.is_set():
                    return
                event = json.loads(line)
                obj = event["object"]
                if event["type"] == "ERROR":
                    if obj.get("code") == 410:
                        self._rv = ""
                    return
                self._rv = obj["metadata"].get("resourceVersion", self._rv)
                if event["type"] == "BOOKMARK":
                    continue
                with self._lock:
                    self._observe(event["type"], obj)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self._rv:
                    self._relist()
                    self._ready.set()
                self._watch_once()
            except urllib.error.HTTPError as err:
                if err.code == 410:
                    self._rv = ""
                else:
                    self._stop.wait(0.5)
            except (OSError, ValueError):
                self._stop.wait(0.5)
