"""Accessors of the objects both kinds read: metadata, pods, batch Jobs, conditions and
times, and what the pod caches keep of a pod (:func:`slim_pod`). Pure, and calls
nothing else of ours: every lookup a sync makes on a cached object is here."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

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
    # metadata_of's one line, kept here so that the sync's pure lookups call nothing else of ours.
    found: Obj = obj.get("metadata") or {}
    return found


def name_of(obj: Obj) -> str:
    return str(_metadata(obj).get("name") or "")


def uid_of(obj: Obj) -> str:
    return str(_metadata(obj).get("uid") or "")


def resource_version_of(obj: Obj) -> str:
    return str(_metadata(obj).get("resourceVersion") or "")


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


_STATUS_KEYS = ("phase", "reason", "message", "startTime", "conditions")
_CONTAINER_KEYS = ("name", "state", "lastState", "ready", "restartCount")
_CONDITION_KEYS = ("type", "status", "reason", "message", "lastTransitionTime")


def _containers(statuses: Any) -> list[Obj]:
    return [
        {k: cs[k] for k in _CONTAINER_KEYS if k in cs}
        for cs in statuses or ()
        if isinstance(cs, dict)
    ]


def slim_pod(pod: Obj) -> Obj:
    """The cached form of ``pod`` (a new dict; the input is not modified): what the
    controllers keep of a pod in their caches, only what they read.

    A worker pod as the API returns it is mostly spec (containers, env, volumes, mounts)
    and container-status detail (images, IDs, timestamps) that no controller decision
    uses. At thousands of cached pods that is most of the operator's memory, so the pod
    informers store this, as client-go's TransformFunc allows.

    Kept: the whole metadata (minus managedFields): names, labels, annotations, owner
    references, deletion and creation timestamps, which adoption, expectations and
    indexing read. ``spec.nodeName``. From the status: phase, reason, message, start
    time, the conditions, and each container's name, state, last state, readiness and
    restart count, which the status, the failure policy and the culprit read.

    Pods are never written back from the cache (workers are created from the builders and
    deleted by name), so nothing dropped here can be lost on a write. Jobs are not slimmed:
    the launcher Job is updated with a PUT of the cached object.
    """
    meta = dict(_metadata(pod))
    meta.pop("managedFields", None)
    out: Obj = {"metadata": meta}
    spec = pod.get("spec") or {}
    out["spec"] = {"nodeName": spec["nodeName"]} if "nodeName" in spec else {}
    status = pod.get("status") or {}
    slim: Obj = {k: status[k] for k in _STATUS_KEYS if k in status}
    if "conditions" in slim:
        slim["conditions"] = [
            {k: c[k] for k in _CONDITION_KEYS if k in c}
            for c in slim["conditions"] or ()
            if isinstance(c, dict)
        ]
    for key in ("initContainerStatuses", "containerStatuses"):
        if key in status:
            slim[key] = _containers(status[key])
    out["status"] = slim
    return out
