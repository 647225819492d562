"""What the migration test records while the operators are swapped, and what it checks.

A :class:`Recorder` thread reads, every quarter second, the operator namespace's Lease
and operator pods and the job namespace's MPIJobs, pods and batch Jobs. Every pod or Job
that existed for more than a sample is in the record, so a pod deleted and recreated
between two checks of the test still shows up as a second uid; a condition flipped and
flipped back shows up by its ``lastTransitionTime``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from devcluster import LocalCluster

Obj = dict[str, Any]
JOB_NAME = "training.kubeflow.org/job-name"
JOB_ROLE = "training.kubeflow.org/job-role"
#: Conditions that must never be True on these jobs.
BAD_CONDITIONS = ("Failed", "Restarting", "Suspended")


@dataclass
class Sample:
    t: float
    lease: Obj
    operator_pods: list[Obj]
    mpijobs: dict[str, Obj] | None
    pods: list[Obj]
    jobs: list[Obj]


@dataclass
class Recorder:
    cluster: LocalCluster
    operator_ns: str
    job_ns: str
    interval: float = 0.25
    samples: list[Sample] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.cluster.ssl_context()  # built once, before the thread shares it

    def __enter__(self) -> Recorder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _items(self, path: str) -> list[Obj] | None:
        status, body = self.cluster.request("GET", path, timeout=5)
        return list(body.get("items") or []) if status == 200 else None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.samples.append(self._sample())
            except (OSError, ValueError):
                continue  # an API server busy for a moment: the next sample

    def _sample(self) -> Sample:
        t = time.monotonic()
        status, lease = self.cluster.request(
            "GET",
            f"/apis/coordination.k8s.io/v1/namespaces/{self.operator_ns}/leases/mpi-operator",
            timeout=5,
        )
        spec = (lease.get("spec") or {}) if status == 200 else {}
        operators = self._items(
            f"/api/v1/namespaces/{self.operator_ns}/pods?labelSelector=app=mpi-operator"
        )
        # The CRD is replaced during the swaps: a moment without MPIJobs is no sample of them.
        mpijobs = self._items(f"/apis/kubeflow.org/v2beta1/namespaces/{self.job_ns}/mpijobs")
        return Sample(
            t,
            spec,
            operators or [],
            None if mpijobs is None else {j["metadata"]["name"]: j for j in mpijobs},
            self._items(f"/api/v1/namespaces/{self.job_ns}/pods") or [],
            self._items(f"/apis/batch/v1/namespaces/{self.job_ns}/jobs") or [],
        )

    # -- what was seen

    def pod_uids(self, job: str, role: str | None = None) -> dict[str, str]:
        """Every pod of ``job`` (of ``role``) ever seen: uid -> name."""
        return {
            p["metadata"]["uid"]: p["metadata"]["name"]
            for s in self.samples
            for p in s.pods
            if p["metadata"].get("labels", {}).get(JOB_NAME) == job
            and (role is None or p["metadata"]["labels"].get(JOB_ROLE) == role)
        }

    def launcher_job_uids(self, job: str) -> set[str]:
        return {
            j["metadata"]["uid"]
            for s in self.samples
            for j in s.jobs
            if j["metadata"]["name"] == f"{job}-launcher"
        }

    def statuses(self, job: str) -> list[tuple[float, Obj]]:
        return [
            (s.t, s.mpijobs[job].get("status") or {})
            for s in self.samples
            if s.mpijobs is not None and job in s.mpijobs
        ]

    def holder_at(self, t: float) -> str:
        """The Lease holder's pod name in the last sample at or before ``t``."""
        holder = ""
        for s in self.samples:
            if s.t > t:
                break
            holder = str(s.lease.get("holderIdentity") or "")
        return holder.split("_", 1)[0]

    def leaderless(self, after: float) -> float:
        """Seconds without a leader at the first handover after ``after``: from the old
        holder's last renewTime to the new holder's acquireTime (both the API server's
        clock as the operators wrote it)."""
        old = new = None
        for s in self.samples:
            if s.t < after or not s.lease.get("holderIdentity"):
                continue
            if old is None or s.lease["holderIdentity"] == old["holderIdentity"]:
                old = s.lease
            else:
                new = s.lease
                break
        assert old is not None and new is not None, f"no handover after {after}"
        renewed = datetime.fromisoformat(old["renewTime"])
        return (datetime.fromisoformat(new["acquireTime"]) - renewed).total_seconds()


def conditions_continuous(statuses: list[tuple[float, Obj]]) -> list[str]:
    """What breaks continuity in ``statuses`` (time-ordered), empty when nothing does:
    a condition gone once seen; Created changed at all; Running changed (status,
    lastTransitionTime or reason) before the job Succeeded; Succeeded changed once True;
    a Failed, Restarting or Suspended condition True."""
    problems: list[str] = []
    seen: dict[str, Obj] = {}
    succeeded = False
    for t, status in statuses:
        now = {c["type"]: c for c in status.get("conditions") or []}
        for kind in seen.keys() - now.keys():
            problems.append(f"{t:.1f}: {kind} gone")
        if now.get("Succeeded", {}).get("status") == "True":
            succeeded = True
        for kind, cond in now.items():
            if kind in BAD_CONDITIONS and cond["status"] == "True":
                problems.append(f"{t:.1f}: {kind} True: {cond.get('message')}")
            before = seen.get(kind)
            if before is None:
                continue
            key = ("status", "lastTransitionTime", "reason")
            changed = [k for k in key if before.get(k) != cond.get(k)]
            if changed and not (kind == "Running" and succeeded):
                problems.append(f"{t:.1f}: {kind} {changed}: {before} -> {cond}")
        seen.update(now)
    return problems
