"""The MPIJob ``make demo`` runs (:mod:`devcluster.demo`): loaded from an example file,
then watched as it runs, one :class:`Snapshot` at a time, with the summary of what the
operator made for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .cluster import LocalCluster

Obj = dict[str, Any]


class DemoError(Exception):
    """The demo cannot go on; the message says why."""


def load_mpijob(path: Path) -> Obj:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    jobs = [d for d in docs if d.get("kind") == "MPIJob"]
    if len(jobs) != 1:
        raise DemoError(f"{path} holds {len(jobs)} MPIJobs; the demo runs exactly one")
    job: Obj = jobs[0]
    return job


def _conditions(job: Obj) -> dict[str, str]:
    return {
        str(c.get("type")): str(c.get("status"))
        for c in (job.get("status") or {}).get("conditions") or []
    }


def job_state(job: Obj) -> str:
    """The latest true condition (the operator's ``status.state``), as the STATE column of
    ``kubectl get mpijobs`` shows it; "Pending" until the operator has written it."""
    return str((job.get("status") or {}).get("state") or "Pending")


def _owned_by(obj: Obj, uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or [])


def _pod_phase(pod: Obj) -> str:
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return str((pod.get("status") or {}).get("phase") or "Pending")


@dataclass
class Snapshot:
    """What the demo shows of the job at one instant."""

    state: str
    conditions: dict[str, str]
    pods: dict[str, str]
    """Pod name -> phase (launcher and workers)."""
    children: dict[str, set[str]]
    """Kind -> names of the objects the MPIJob (or its launcher Job) owns."""

    def line(self, name: str, elapsed: float) -> str:
        conds = " ".join(f"{k}={v}" for k, v in self.conditions.items()) or "-"
        pods = ", ".join(f"{n} {p}" for n, p in sorted(self.pods.items())) or "-"
        return (
            f"[{elapsed:5.1f}s] mpijob/{name}  {self.state:<10} conditions: {conds}  pods: {pods}"
        )


@dataclass
class Observer:
    cluster: LocalCluster
    namespace: str
    name: str
    seen: dict[str, dict[str, str]] = field(default_factory=dict)
    """Kind -> name -> last state seen, for the summary (objects may be gone by then)."""

    def _list(self, path: str) -> list[Obj]:
        status, body = self.cluster.request("GET", path)
        if status != 200:
            raise DemoError(f"GET {path}: {status} {body}")
        items: list[Obj] = body.get("items") or []
        return items

    def snapshot(self) -> Snapshot | None:
        ns = self.namespace
        status, job = self.cluster.request(
            "GET", f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/{self.name}"
        )
        if status == 404:
            return None
        if status != 200:
            raise DemoError(f"reading mpijob {ns}/{self.name}: {status} {job}")
        uid = job["metadata"]["uid"]
        children: dict[str, set[str]] = {}
        owners = {uid}
        kinds = [
            ("Job", f"/apis/batch/v1/namespaces/{ns}/jobs"),
            ("Service", f"/api/v1/namespaces/{ns}/services"),
            ("ConfigMap", f"/api/v1/namespaces/{ns}/configmaps"),
            ("Secret", f"/api/v1/namespaces/{ns}/secrets"),
        ]
        for kind, path in kinds:
            for obj in self._list(path):
                if _owned_by(obj, uid):
                    children.setdefault(kind, set()).add(obj["metadata"]["name"])
                    self.seen.setdefault(kind, {})[obj["metadata"]["name"]] = "created"
                    if kind == "Job":
                        owners.add(obj["metadata"]["uid"])
        pods = {}
        for pod in self._list(f"/api/v1/namespaces/{ns}/pods"):
            if any(_owned_by(pod, o) for o in owners):
                pods[pod["metadata"]["name"]] = _pod_phase(pod)
        for pod_name, phase in pods.items():
            self.seen.setdefault("Pod", {})[pod_name] = phase
        return Snapshot(job_state(job), _conditions(job), pods, children)

    def summary(self, current: Snapshot | None) -> list[str]:
        lines = []
        live = current.children if current else {}
        live_pods = current.pods if current else {}
        for kind in ("Service", "ConfigMap", "Secret", "Job"):
            for name in sorted(self.seen.get(kind, {})):
                gone = "" if name in live.get(kind, set()) else " (since deleted)"
                lines.append(f"  {kind:<10} {name}{gone}")
        for name, phase in sorted(self.seen.get("Pod", {}).items()):
            if name in live_pods:
                lines.append(f"  {'Pod':<10} {name} ({live_pods[name]})")
            else:
                lines.append(f"  {'Pod':<10} {name} (last seen {phase}; deleted by cleanPodPolicy)")
        return lines
