"""The workers' Ready timeout of a Kubeflow MPIJob (pure).

``runPolicy.workersReadyTimeoutSeconds`` (ours): a job whose workers are not all Ready
that long after it started, resumed or restarted, and that has not run since, fails
(reason ``WorkersNotReady``) naming the workers that were not Ready. The decision is
pure; the clock comes in as ``now``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import ConditionType, MPIJob
from mpi_operator.builders.kubeflow.common import is_suspended
from mpi_operator.controller.core.objects import parse_time
from mpi_operator.controller.kubeflow.conditions import get_condition, has_true_condition

NOT_READY_REASON = "WorkersNotReady"
_NAMED = 10


def ready_seconds_left(job: MPIJob, now: datetime) -> float | None:
    """Until the workers' time to be Ready is over; None when no timeout applies."""
    timeout = job.spec.run_policy.workers_ready_timeout_seconds
    status = job.status
    if timeout is None or status is None or is_suspended(job):
        return None
    if has_true_condition(status, ConditionType.RUNNING):
        return None
    if has_true_condition(status, ConditionType.SUSPENDED):
        # Resumed in this sync: its startTime is reset below, the clock starts then.
        return None
    stamps = [parse_time(status.start_time)]
    restarting = get_condition(status, ConditionType.RESTARTING)
    if restarting is not None and restarting.status == "True":
        stamps.append(parse_time(restarting.last_update_time))
    known = [s for s in stamps if s is not None]
    if not known:
        return None
    return max(known) + timeout - now.timestamp()


def _ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def not_ready_message(job: MPIJob, workers: Sequence[Obj], now: datetime) -> str | None:
    """The Failed condition's message once the timeout is over with workers not Ready."""
    left = ready_seconds_left(job, now)
    if left is None or left > 0:
        return None
    names = [str(w["metadata"].get("name")) for w in workers if not _ready(w)]
    if not names:
        return None
    listed = ", ".join(names[:_NAMED]) + (", ..." if len(names) > _NAMED else "")
    timeout = job.spec.run_policy.workers_ready_timeout_seconds
    return f"{len(names)}/{len(workers)} workers were not Ready within {timeout}s: {listed}"
