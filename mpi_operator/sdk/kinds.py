"""What the SDK needs to know of each MPIJob kind: where it lives in the API, its model,
how to tell that a job reached a condition or failed, a one-line summary of its status,
and how to find its launcher pod."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mpi_operator.api import t9k, v2beta1
from mpi_operator.api.object_model import ApiObject

from .errors import InvalidArgumentError

JobT = TypeVar("JobT", bound=ApiObject)


@dataclass(frozen=True)
class JobKind(Generic[JobT]):
    group: str
    version: str
    plural: str
    kind: str
    model: type[JobT]
    conditions: tuple[str, ...]
    """The names :meth:`reached` accepts."""
    reached: Callable[[JobT, str], bool]
    failed: Callable[[JobT], bool]
    summary: Callable[[JobT], str]
    launcher_selector: Callable[[str], str]
    """The label selector of a job's launcher pods, from the job's name."""
    pod_selector: Callable[[str], str]
    """The label selector of all a job's pods, from the job's name."""
    worker_selector: Callable[[str], str]
    """The label selector of a job's worker pods, from the job's name."""
    launcher_container: str | None
    """The launcher pod's container whose logs are the job's; None: the first."""
    suspend_patch: Callable[[bool], dict[str, Any]]
    """The merge patch that suspends (True) or resumes (False) a job."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def check_condition(self, condition: str) -> str:
        name = str(condition)
        if name not in self.conditions:
            raise InvalidArgumentError(
                f"{self.kind} ({self.api_version}) has no condition {name!r}; "
                f"one of {', '.join(self.conditions)}"
            )
        return name


def _true(conditions: list[v2beta1.JobCondition] | list[t9k.JobCondition] | None) -> list[str]:
    return [c.type for c in conditions or [] if c.status == "True"]


def state(job: v2beta1.MPIJob) -> str:
    """The latest true condition of a Kubeflow MPIJob (``status.state``), or ``""``."""
    status = job.status
    if status is None:
        return ""
    if status.state:
        return status.state
    true = _true(status.conditions)
    return true[-1] if true else ""


def _v2_reached(job: v2beta1.MPIJob, condition: str) -> bool:
    return condition in _true(job.status.conditions if job.status else None)


def _v2_failed(job: v2beta1.MPIJob) -> bool:
    return _v2_reached(job, v2beta1.ConditionType.FAILED)


def _replicas(status: v2beta1.ReplicaStatus | None) -> str:
    if status is None:
        return "-"
    parts = [
        f"{k}={v}"
        for k, v in (
            ("active", status.active),
            ("succeeded", status.succeeded),
            ("failed", status.failed),
        )
        if v
    ]
    return ",".join(parts) or "0"


def _v2_summary(job: v2beta1.MPIJob) -> str:
    status = job.status
    replicas = (status.replica_statuses if status else None) or {}
    workers = job.replica_spec(v2beta1.ReplicaType.WORKER)
    desired = workers.replicas if workers is not None and workers.replicas is not None else 1
    text = (
        f"{state(job) or 'Pending'}: launcher {_replicas(replicas.get('Launcher'))}, "
        f"workers {_replicas(replicas.get('Worker'))} of {desired}"
    )
    if status is not None and status.last_failure is not None and status.last_failure.message:
        text += f"; last failure: {status.last_failure.message}"
    return text


def _t9k_reached(job: t9k.MPIJob, condition: str) -> bool:
    status = job.status
    if status is None:
        return False
    return status.phase == condition or condition in _true(status.conditions)


def _t9k_failed(job: t9k.MPIJob) -> bool:
    return _t9k_reached(job, t9k.Phase.FAILED)


def _t9k_summary(job: t9k.MPIJob) -> str:
    status = job.status
    phase = (status.phase if status else None) or "Pending"
    agg = status.aggregate if status else None
    if agg is None:
        return phase
    counts = ", ".join(
        f"{k} {v}"
        for k, v in (
            ("creating", agg.creating),
            ("pending", agg.pending),
            ("running", agg.running),
            ("succeeded", agg.succeeded),
            ("failed", agg.failed),
        )
        if v
    )
    return f"{phase}: pods {counts or 'none'}"


KUBEFLOW: JobKind[v2beta1.MPIJob] = JobKind(
    group=v2beta1.GROUP,
    version=v2beta1.VERSION,
    plural=v2beta1.PLURAL,
    kind=v2beta1.KIND,
    model=v2beta1.MPIJob,
    conditions=tuple(c.value for c in v2beta1.ConditionType),
    reached=_v2_reached,
    failed=_v2_failed,
    summary=_v2_summary,
    launcher_selector=lambda name: (
        f"{v2beta1.JOB_NAME_LABEL}={name},{v2beta1.JOB_ROLE_LABEL}=launcher"
    ),
    pod_selector=lambda name: f"{v2beta1.JOB_NAME_LABEL}={name}",
    worker_selector=lambda name: f"{v2beta1.JOB_NAME_LABEL}={name},{v2beta1.JOB_ROLE_LABEL}=worker",
    launcher_container=None,
    suspend_patch=lambda on: {"spec": {"runPolicy": {"suspend": on}}},
)

T9K: JobKind[t9k.MPIJob] = JobKind(
    group=t9k.GROUP,
    version=t9k.VERSION,
    plural=t9k.PLURAL,
    kind=t9k.KIND,
    model=t9k.MPIJob,
    conditions=tuple(
        dict.fromkeys([*(p.value for p in t9k.Phase), *(c.value for c in t9k.ConditionType)])
    ),
    reached=_t9k_reached,
    failed=_t9k_failed,
    summary=_t9k_summary,
    launcher_selector=lambda name: (
        f"{t9k.JOB_NAME_LABEL}={name},{t9k.REPLICA_TYPE_LABEL}={t9k.ReplicaType.LAUNCHER.value}"
    ),
    pod_selector=lambda name: f"{t9k.JOB_NAME_LABEL}={name}",
    worker_selector=lambda name: (
        f"{t9k.JOB_NAME_LABEL}={name},{t9k.REPLICA_TYPE_LABEL}={t9k.ReplicaType.WORKER.value}"
    ),
    launcher_container=t9k.MPI_CONTAINER_NAME,
    # T9k's pause mode: the pods are deleted until it is switched off.
    suspend_patch=lambda on: {"spec": {"runMode": {"pause": {"enabled": on}}}},
)
