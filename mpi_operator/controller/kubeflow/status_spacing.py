"""Whether a Kubeflow MPIJob's changed status may wait its turn (pure): a fan-out's
progress, or a launcher between its pods (see
:func:`~mpi_operator.controller.core.writes.write_status`)."""

from __future__ import annotations

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import ConditionType, JobStatus, MPIJob, ReplicaType
from mpi_operator.builders.kubeflow.common import is_suspended
from mpi_operator.builders.kubeflow.worker import worker_replicas
from mpi_operator.controller.core.spacing import TRANSIENT
from mpi_operator.controller.core.writes import PASSING, PROGRESS, Spacing
from mpi_operator.controller.kubeflow.conditions import has_true_condition, is_finished


def spacing_of(job: MPIJob, status: JobStatus, old: Obj, new: Obj) -> Spacing | None:
    """Whether a changed status may wait its turn (see
    :func:`~mpi_operator.controller.core.writes.write_status`): a fan-out's progress
    (only more replicas active), or a launcher between its pods."""
    if _fanning_out(status) and counts_only(old, new):
        return Spacing(PROGRESS, worker_replicas(job))
    # Ours only: a launcher pod that ended leaves its Job unfinished for a moment; the
    # finished Job's write (or the next pod's) follows, so the gap waits. Not while
    # suspended: a suspended launcher Job does not finish.
    if not is_finished(status) and not is_suspended(job) and _launcher_between_pods(old, new):
        return Spacing(PASSING, TRANSIENT)
    return None


LAUNCHER = ReplicaType.LAUNCHER.value


def counts_only(old: Obj, new: Obj) -> bool:
    """Only more replicas became active (progress): the conditions, times, the other
    counts and the rest are as written."""
    if not _only_replica_statuses_differ(old, new):
        return False
    before, after = old.get("replicaStatuses") or {}, new.get("replicaStatuses") or {}
    if before.keys() != after.keys():
        return False
    return all(
        _without(was, "active") == _without(after[kind], "active")
        and int(after[kind].get("active") or 0) >= int(was.get("active") or 0)
        for kind, was in before.items()
    )


def _launcher_between_pods(old: Obj, new: Obj) -> bool:
    """Only the launcher's active count went down: its pod ended, and its Job is not
    yet marked finished (nor its next pod counted)."""
    if not _only_replica_statuses_differ(old, new):
        return False
    before, after = old.get("replicaStatuses") or {}, new.get("replicaStatuses") or {}
    if _without(before, LAUNCHER) != _without(after, LAUNCHER):
        return False
    was, now = before.get(LAUNCHER) or {}, after.get(LAUNCHER) or {}
    return _without(was, "active") == _without(now, "active") and int(now.get("active") or 0) < int(
        was.get("active") or 0
    )


def _only_replica_statuses_differ(old: Obj, new: Obj) -> bool:
    """A status was written before (it has conditions) and only the replica counts
    changed since."""
    return bool(old.get("conditions")) and _without(old, "replicaStatuses") == _without(
        new, "replicaStatuses"
    )


def _without(obj: Obj, key: str) -> Obj:
    return {k: v for k, v in obj.items() if k != key}


def _fanning_out(status: JobStatus) -> bool:
    """Started but not yet Running, nor finished: the phase whose progress is spaced."""
    return not is_finished(status) and not has_true_condition(status, ConditionType.RUNNING)
