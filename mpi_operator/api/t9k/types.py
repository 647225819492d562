"""Models of the TensorStack T9k-style MPIJob API (``batch.tensorstack.dev/v1beta1``).

As in :mod:`mpi_operator.api.v2beta1.types`: JSON names are camelCase aliases,
every model keeps unknown fields, pod templates are plain dicts, and
enumerated fields are typed ``str`` so a bad value reaches validation and
comes back as a field error rather than an opaque parse failure.

Two published spellings are accepted where T9k's own documents disagree:
``cleanUpWorkers`` as a string (``all``/``unfinished``/``none``, any case) or
a boolean (``true`` = all, ``false`` = none), and ``enabled`` or ``enable`` in
``runMode.debug`` and ``runMode.pause``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from mpi_operator.api.object_model import ApiModel, ApiObject

GROUP = "batch.tensorstack.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "MPIJob"
PLURAL = "mpijobs"

OPERATOR_NAME = "mpi-operator"
# Labels on every child; the T9k controller's caches select on the first one,
# so neither controller ever sees the other's pods.
OPERATOR_LABEL = f"{GROUP}/operator-name"
JOB_NAME_LABEL = f"{GROUP}/job-name"
REPLICA_TYPE_LABEL = f"{GROUP}/replica-type"
REPLICA_INDEX_LABEL = f"{GROUP}/replica-index"

MPI_CONTAINER_NAME = "mpi-worker"

SCHEDULER_GROUP = "scheduler.tensorstack.dev"
SCHEDULER_VERSION = "v1beta1"
SCHEDULER_API_VERSION = f"{SCHEDULER_GROUP}/{SCHEDULER_VERSION}"
T9K_SCHEDULER_NAME = "t9k-scheduler"
GROUP_NAME_LABEL = f"{SCHEDULER_GROUP}/group-name"
QUEUE_LABEL = f"{SCHEDULER_GROUP}/queue"


class CleanUpPolicy(StrEnum):
    ALL = "all"
    UNFINISHED = "unfinished"
    NONE = "none"


class ReplicaType(StrEnum):
    LAUNCHER = "launcher"
    WORKER = "worker"


class Phase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    DEBUGGING = "Debugging"
    PAUSED = "Paused"
    RESUMING = "Resuming"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class ConditionType(StrEnum):
    INITIALIZED = "Initialized"
    RUNNING = "Running"
    REPLICA_FAILURE = "ReplicaFailure"
    COMPLETED = "Completed"
    FAILED = "Failed"
    PAUSED = "Paused"
    DEBUGGING = "Debugging"


_Model = ApiModel


class WorkerSpec(_Model):
    replicas: int | None = None
    extra_mpi_args: list[str] | None = Field(default=None, alias="extraMPIArgs")
    cmd: list[str] | None = None
    template: dict[str, Any] = Field(default_factory=dict)


class SSHConfig(_Model):
    ssh_auth_mount_path: str | None = None
    sshd_path: str | None = None


class RunPolicy(_Model):
    clean_up_workers: str | bool | None = None

    def clean_up_policy(self) -> str:
        """The normalised policy: ``all``, ``unfinished``, ``none`` (or the bad value)."""
        value = self.clean_up_workers
        if value is None:
            return CleanUpPolicy.NONE.value
        if isinstance(value, bool):
            return (CleanUpPolicy.ALL if value else CleanUpPolicy.NONE).value
        return value.lower()


class T9kScheduler(_Model):
    queue: str | None = None
    priority: int | None = None


class SchedulePolicy(_Model):
    t9k_scheduler: T9kScheduler | None = Field(default=None, alias="t9kScheduler")


class DebugReplicaSpec(_Model):
    type: str
    skip_init_container: bool | None = None
    command: list[str] | None = None


class ResumeSpec(_Model):
    type: str
    skip_init_container: bool | None = None
    command: list[str] | None = None
    args: list[str] | None = None


class _Switch(_Model):
    enabled: bool | None = None
    enable: bool | None = None

    @property
    def is_enabled(self) -> bool:
        return bool(self.enabled if self.enabled is not None else self.enable)


class DebugMode(_Switch):
    replica_specs: list[DebugReplicaSpec] | None = None

    def spec_for(self, replica_type: str) -> DebugReplicaSpec | None:
        return next((s for s in self.replica_specs or [] if s.type == replica_type), None)


class PauseMode(_Switch):
    resume_specs: list[ResumeSpec] | None = None

    def spec_for(self, replica_type: str) -> ResumeSpec | None:
        return next((s for s in self.resume_specs or [] if s.type == replica_type), None)


class RunMode(_Model):
    debug: DebugMode | None = None
    pause: PauseMode | None = None


class MPIJobSpec(_Model):
    worker: WorkerSpec | None = None
    mca: dict[str, str] | None = None
    mpi_home: str | None = None
    ssh: SSHConfig = Field(default_factory=SSHConfig)
    run_policy: RunPolicy = Field(default_factory=RunPolicy)
    scheduler: SchedulePolicy | None = None
    run_mode: RunMode | None = None


class JobCondition(_Model):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class Aggregate(_Model):
    creating: int = 0
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    unknown: int = 0
    deleted: int = 0


class ContainerStatus(_Model):
    name: str | None = None
    container_phase: str
    exit_code: int | None = None


class ReplicaStatus(_Model):
    name: str
    uid: str
    phase: str
    containers: list[ContainerStatus] = Field(default_factory=list)


class Task(_Model):
    replica_type: str
    replica_index: int
    replicas: list[ReplicaStatus] = Field(default_factory=list)


class MPIJobStatus(_Model):
    phase: str | None = None
    conditions: list[JobCondition] | None = None
    aggregate: Aggregate | None = None
    tasks: list[Task] | None = None


class MPIJob(ApiObject):
    api_version: str | None = API_VERSION
    kind: str | None = KIND
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: MPIJobSpec = Field(default_factory=MPIJobSpec)
    status: MPIJobStatus | None = None

    @property
    def worker(self) -> WorkerSpec:
        return self.spec.worker or WorkerSpec()

    @property
    def worker_replicas(self) -> int:
        replicas = self.worker.replicas
        return replicas if replicas is not None else 1

    @property
    def debug(self) -> DebugMode | None:
        mode = self.spec.run_mode
        debug = mode.debug if mode is not None else None
        return debug if debug is not None and debug.is_enabled else None

    @property
    def pause(self) -> PauseMode | None:
        """The pause settings, whether pause is on or off (resumeSpecs apply when off)."""
        mode = self.spec.run_mode
        return mode.pause if mode is not None else None

    @property
    def paused(self) -> bool:
        pause = self.pause
        return pause is not None and pause.is_enabled

    @property
    def t9k_scheduler(self) -> T9kScheduler | None:
        scheduler = self.spec.scheduler
        return scheduler.t9k_scheduler if scheduler is not None else None
