"""``status.aggregate`` and ``status.tasks`` of a T9k MPIJob (pure), bounded in size.

* ``aggregate`` counts every pod slot of the job (the launcher and each worker): a
  slot without a pod is ``creating``, or ``deleted`` when the job is paused or
  finished; a pod being deleted is ``deleted``; otherwise its phase counts.
* ``tasks`` lists a slot's current pod with its phase and per-container state and
  exit code. A job of up to :data:`MAX_TASKS` slots lists every slot, as the T9k
  operator does. Ours, for a bigger job: only the slots whose pod is not Running (the
  ones worth a look), at most :data:`MAX_TASKS` of them, failed and unknown pods first,
  in slot order; ``aggregate`` still counts them all. One entry per pod made the status
  grow with the worker count (209 KB at 1,000 workers, 1.05 MB at 5,000) until, past
  about 7,000 workers, the API server refused every status write. The entries are also
  kept under :data:`TASKS_BYTES` in all, whatever the pods' containers.

A write that only reports a fan-out's progress (:func:`progress_only`) is spaced out
as the Kubeflow status's (:mod:`~mpi_operator.controller.core.spacing`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mpi_operator.api.object_model import Obj
from mpi_operator.api.t9k import (
    Aggregate,
    ContainerStatus,
    MPIJob,
    Phase,
    ReplicaStatus,
    ReplicaType,
    Task,
)
from mpi_operator.builders.t9k.common import launcher_name, worker_name
from mpi_operator.controller.core.objects import is_terminating, name_of, pod_phase, uid_of

#: The most entries ``status.tasks`` has; a job of at most this many slots lists all.
MAX_TASKS = 100
#: The most bytes the entries of ``status.tasks`` take in all (in JSON).
TASKS_BYTES = 128 * 1024
#: The most pod names a condition's message lists ("... and N more").
MAX_NAMES = 10

_POD_PHASE_COUNTERS = {
    "Pending": "pending",
    "Running": "running",
    "Succeeded": "succeeded",
    "Failed": "failed",
}
#: Counts that only grow while a job fans out: a change of another is written at once.
_FAN_OUT_COUNTS = ("creating", "pending", "running")
#: Phases of a job on its way to Running, whose progress-only writes are spaced.
_FANNING_OUT = (Phase.PENDING.value, Phase.RESUMING.value)


def slots(job: MPIJob) -> list[tuple[ReplicaType, int, str]]:
    """Every pod slot of the job: (type, index, pod name), launcher first."""
    out = [(ReplicaType.LAUNCHER, 0, launcher_name(job))]
    out += [(ReplicaType.WORKER, i, worker_name(job, i)) for i in range(job.worker_replicas)]
    return out


def _container_statuses(pod: Obj) -> list[ContainerStatus]:
    result = []
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        state = cs.get("state") or {}
        fields: dict[str, Any] = {"name": cs.get("name")} if cs.get("name") else {}
        if "terminated" in state:
            fields["container_phase"] = "Terminated"
            exit_code = (state.get("terminated") or {}).get("exitCode")
            if exit_code is not None:
                fields["exit_code"] = int(exit_code)
        elif "running" in state:
            fields["container_phase"] = "Running"
        else:
            fields["container_phase"] = "Waiting"
        result.append(ContainerStatus(**fields))
    return result


def task_of(replica_type: ReplicaType, index: int, pod: Obj | None) -> Task:
    replicas: list[ReplicaStatus] = []
    if pod is not None:
        replicas.append(
            ReplicaStatus(
                name=name_of(pod),
                uid=uid_of(pod),
                phase=pod_phase(pod) or "Unknown",
                containers=_container_statuses(pod),
            )
        )
    return Task(replica_type=replica_type.value, replica_index=index, replicas=replicas)


def aggregate_and_tasks(
    job: MPIJob, pods: Mapping[str, Obj], gone_means_deleted: bool
) -> tuple[Aggregate, list[Task]]:
    counts = dict.fromkeys(
        ("creating", "pending", "running", "succeeded", "failed", "unknown", "deleted"), 0
    )
    every = slots(job)
    small = len(every) <= MAX_TASKS
    # (rank, slot number): a big job lists failed and unknown pods first (rank 0), then
    # the others that do not run; a small one lists every slot.
    listed: list[tuple[int, int]] = []
    for number, (_, _, name) in enumerate(every):
        pod = pods.get(name)
        if pod is None:
            counts["deleted" if gone_means_deleted else "creating"] += 1
            phase = None
        elif is_terminating(pod):
            counts["deleted"] += 1
            phase = None
        else:
            phase = pod_phase(pod)
            counts[_POD_PHASE_COUNTERS.get(phase, "unknown")] += 1
        if small:
            listed.append((0, number))
        elif phase != "Running":
            listed.append((0 if phase in ("Failed", "Unknown") else 1, number))
    chosen = sorted(number for _, number in sorted(listed)[:MAX_TASKS])
    tasks: list[Task] = []
    size = 0
    for number in chosen:
        replica_type, index, name = every[number]
        entry = task_of(replica_type, index, pods.get(name))
        size += len(entry.model_dump_json(by_alias=True, exclude_unset=True)) + 1
        if size > TASKS_BYTES:
            break
        tasks.append(entry)
    return Aggregate(**counts), tasks


def listing(names: Sequence[str], most: int = MAX_NAMES) -> str:
    """``names`` joined by commas, the first ``most`` of them and "and N more"."""
    shown = ", ".join(names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"


def progress_only(old: Obj, new: Obj) -> bool:
    """Only a fan-out's progress since the last write: a status written before (it has
    conditions), of a job on its way to Running, whose pods only moved on from being
    created to pending to running (``tasks`` follow them); the phase, the conditions
    and the other counts are as written."""
    if not old.get("conditions") or new.get("phase") not in _FANNING_OUT:
        return False
    if _without_pods(old) != _without_pods(new):
        return False
    before, after = old.get("aggregate") or {}, new.get("aggregate") or {}
    same = {k: v for k, v in before.items() if k not in _FAN_OUT_COUNTS}
    return same == {k: v for k, v in after.items() if k not in _FAN_OUT_COUNTS} and int(
        after.get("running") or 0
    ) >= int(before.get("running") or 0)


def _without_pods(status: Obj) -> Obj:
    return {k: v for k, v in status.items() if k not in ("aggregate", "tasks")}
