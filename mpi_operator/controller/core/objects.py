"""Accessors of the objects both kinds read: metadata, pods, batch Jobs, conditions and
times (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Protocol, TypeVar

from mpi_operator.api.object_model import Obj

TRUE = "True"
FALSE = "False"


TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def format_time(t: datetime) -> str:
    """RFC 3339 with second precision, as metav1.Time serialises."""
    return t.strftime(TIME_FORMAT)


def parse_time(stamp: str | None) -> float | None:
    """A metav1.Time (UTC, second precision) as epoch seconds; None when unset or bad."""
    try:
        return datetime.strptime(stamp or "", TIME_FORMAT).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _metadata(obj: Obj) -> Obj:
    # Read here, not through api.object_model: these accessors run on every pod a sync reads.
    found: Obj = obj.get("metadata") or {}
    return found


def name_of(obj: Obj) -> str:
    return str(_metadata(obj).get("name") or "")


def uid_of(obj: Obj) -> str:
    return str(_metadata(obj).get("uid") or "")


def labels_of(obj: Obj) -> dict[str, str]:
    labels: dict[str, str] = _metadata(obj).get("labels") or {}
    return labels


def pod_phase(pod: Obj | None) -> str:
    """The pod's phase; empty for a pod that is not there or has no status yet."""
    if pod is None:
        return ""
    return str((pod.get("status") or {}).get("phase") or "")


def is_terminating(obj: Obj) -> bool:
    """The object carries a deletionTimestamp: it is already being deleted."""
    return bool(_metadata(obj).get("deletionTimestamp"))


def job_condition(job: Obj, condition_type: str) -> Obj | None:
    """A condition of a batch Job, by type."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return dict(condition)
    return None


def is_job_succeeded(job: Obj) -> bool:
    condition = job_condition(job, "Complete")
    return condition is not None and condition.get("status") == TRUE


def is_job_failed(job: Obj) -> bool:
    condition = job_condition(job, "Failed")
    return condition is not None and condition.get("status") == TRUE


def is_job_past_deadline(job: Obj) -> bool:
    """The Job failed, or is failing (FailureTarget), for its activeDeadlineSeconds."""
    conditions = (job_condition(job, kind) or {} for kind in ("Failed", "FailureTarget"))
    return any(
        c.get("status") == TRUE and c.get("reason") == "DeadlineExceeded" for c in conditions
    )


def is_job_finished(job: Obj) -> bool:
    return is_job_succeeded(job) or is_job_failed(job)


def is_job_suspended(job: Obj) -> bool:
    return bool((job.get("spec") or {}).get("suspend"))


class _Condition(Protocol):
    @property
    def type(self) -> str: ...


C = TypeVar("C", bound=_Condition, covariant=True)


class _WithConditions(Protocol[C]):
    @property
    def conditions(self) -> Sequence[C] | None: ...


def get_condition(status: _WithConditions[C], condition_type: str) -> C | None:
    """An MPIJob status condition (either kind's), by type."""
    for condition in status.conditions or []:
        if condition.type == condition_type:
            return condition
    return None
