"""Who failed (pure): a failed pod as the failure policy and the messages see it, and
the culprit of several.

A failed pod is described by its first container that terminated with a non-zero exit
code (init containers first) and by the pod's own reason (Evicted, DeadlineExceeded,
...). Of several failed pods the one that failed first is the culprit: a worker's OOM
makes mpirun fail a moment later. Ties go to workers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import JOB_ROLE_LABEL, PodFailure
from mpi_operator.controller.core.objects import labels_of, name_of, uid_of

_FAR_FUTURE = "9999-12-31T23:59:59Z"


@dataclass(frozen=True, slots=True)
class FailedPod:
    """A failed pod as the failure policy and the messages see it."""

    role: str  # "launcher" or "worker"
    pod: str
    uid: str
    container: str | None
    exit_code: int | None
    reason: str | None  # the container's termination reason
    pod_reason: str | None
    pod_message: str | None
    conditions: tuple[tuple[str, str], ...]  # (type, status) of the pod's conditions
    terminations: tuple[tuple[str, int, str], ...]  # (container, exit code, reason), non-zero
    finished_at: str

    @property
    def message(self) -> str:
        if self.container is not None:
            text = (
                f"{self.role} {self.pod} container {self.container} terminated: "
                f"{self.reason or 'Error'} (exit {self.exit_code})"
            )
            if self.pod_reason:
                text += f"; pod {self.pod_reason}"
                if self.pod_message:
                    text += f": {self.pod_message}"
            return text
        text = f"{self.role} {self.pod} failed: {self.pod_reason or 'Failed'}"
        return text + (f": {self.pod_message}" if self.pod_message else "")

    def status(self, now: str) -> PodFailure:
        return PodFailure(
            pod=self.pod,
            replica_type=self.role.capitalize(),
            container=self.container,
            exit_code=self.exit_code,
            reason=self.reason,
            pod_reason=self.pod_reason,
            message=self.message,
            time=now,
        )


def _terminated(container_status: Obj) -> Obj | None:
    for key in ("state", "lastState"):
        terminated = (container_status.get(key) or {}).get("terminated")
        if terminated and int(terminated.get("exitCode") or 0) != 0:
            return dict(terminated)
    return None


def _failed_containers(status: Obj) -> list[tuple[str, Obj]]:
    """(name, terminated state) of the containers that exited non-zero, init ones first."""
    found: list[tuple[str, Obj]] = []
    for key in ("initContainerStatuses", "containerStatuses"):
        for container_status in status.get(key) or []:
            terminated = _terminated(container_status)
            if terminated is not None:
                found.append((str(container_status.get("name") or ""), terminated))
    return found


def failed_pod(pod: Obj) -> FailedPod | None:
    """The pod's failure, if its phase is Failed."""
    status = pod.get("status") or {}
    if status.get("phase") != "Failed":
        return None
    conditions = status.get("conditions") or []
    failed = _failed_containers(status)
    container, terminated = failed[0] if failed else (None, {})
    stamps = [str(c.get("lastTransitionTime") or "") for c in conditions]
    finished_at = str(terminated.get("finishedAt") or "") or max(stamps, default="")
    return FailedPod(
        role=str(labels_of(pod).get(JOB_ROLE_LABEL) or "pod"),
        pod=name_of(pod),
        uid=uid_of(pod),
        container=container,
        exit_code=int(terminated["exitCode"]) if failed else None,
        reason=str(terminated.get("reason") or "") or None,
        pod_reason=str(status.get("reason") or "") or None,
        pod_message=str(status.get("message") or "") or None,
        conditions=tuple((str(c.get("type")), str(c.get("status"))) for c in conditions),
        terminations=tuple(
            (name, int(t["exitCode"]), str(t.get("reason") or "")) for name, t in failed
        ),
        finished_at=finished_at or _FAR_FUTURE,
    )


def failed_pods(pods: Iterable[Obj]) -> list[FailedPod]:
    """The failed ones among ``pods``, the earliest failure first."""
    found = [f for f in (failed_pod(p) for p in pods) if f is not None]
    return sorted(found, key=lambda f: (f.finished_at, f.role != "worker", f.pod))


def culprit(pods: Iterable[Obj]) -> FailedPod | None:
    found = failed_pods(pods)
    return found[0] if found else None
