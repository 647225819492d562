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


def _doc(text: str) -> Any:
    """An optional field with its description (the CRD's, for ``kubectl explain``)."""
    return Field(default=None, description=text)


class WorkerSpec(_Model):
    """The worker pods and the MPI command the launcher runs on them."""

    replicas: int | None = _doc("Number of worker pods, 1 to 100000. Defaults to 1.")
    extra_mpi_args: list[str] | None = Field(
        default=None,
        alias="extraMPIArgs",
        description="Extra arguments of mpirun, placed before cmd.",
    )
    cmd: list[str] | None = _doc(
        "The command mpirun runs on every worker slot (the program and its arguments). Required."
    )
    template: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Pod template of the workers (and of the launcher, which runs mpirun in its "
            "first container); it must define at least one container."
        ),
    )


class SSHConfig(_Model):
    """Where the SSH keys and sshd are in the image."""

    ssh_auth_mount_path: str | None = _doc(
        "Absolute directory where the SSH keys are mounted. Defaults to /root/.ssh."
    )
    sshd_path: str | None = _doc(
        "Absolute path of sshd in the workers' image. Defaults to /usr/sbin/sshd."
    )


class RunPolicy(_Model):
    """What happens to the pods once the job finished."""

    clean_up_workers: str | bool | None = _doc(
        "Worker pods deleted once the job finished: all, unfinished or none (any case), "
        "or true (all) / false (none). Defaults to none."
    )

    def clean_up_policy(self) -> str:
        """The normalised policy: ``all``, ``unfinished``, ``none`` (or the bad value)."""
        value = self.clean_up_workers
        if value is None:
            return CleanUpPolicy.NONE.value
        if isinstance(value, bool):
            return (CleanUpPolicy.ALL if value else CleanUpPolicy.NONE).value
        return value.lower()


class T9kScheduler(_Model):
    """The T9k scheduler's queue and priority; the job gets a PodGroup of its own."""

    queue: str | None = _doc("Queue of the T9k scheduler. Required.")
    priority: int | None = _doc("Priority within the queue, 0 to 100. Defaults to 0.")


class SchedulePolicy(_Model):
    """The scheduler of the job's pods; unset: the default scheduler."""

    t9k_scheduler: T9kScheduler | None = Field(
        default=None,
        alias="t9kScheduler",
        description=(
            "Schedule the pods with the T9k scheduler (a scheduler.tensorstack.dev PodGroup)."
        ),
    )


_REPLICA_TYPE = "Replica type: launcher or worker; each at most once."


class DebugReplicaSpec(_Model):
    """How the pods of one replica type start in debug mode."""

    type: str = Field(description=_REPLICA_TYPE)
    skip_init_container: bool | None = _doc(
        "Start the launcher without waiting for the workers' sshd."
    )
    command: list[str] | None = _doc(
        "Command of the pods' first container instead of their usual one "
        "(default: the launcher runs sleep inf)."
    )


class ResumeSpec(_Model):
    """How the pods of one replica type are recreated when the job resumes."""

    type: str = Field(description=_REPLICA_TYPE)
    skip_init_container: bool | None = _doc(
        "Start the launcher without waiting for the workers' sshd."
    )
    command: list[str] | None = _doc("Command of the pods' first container on resume.")
    args: list[str] | None = _doc("Arguments of the pods' first container on resume.")


class _Switch(_Model):
    enabled: bool | None = _doc("Whether the mode is on.")
    enable: bool | None = _doc("Whether the mode is on (another spelling of enabled).")

    @property
    def is_enabled(self) -> bool:
        return bool(self.enabled if self.enabled is not None else self.enable)


class DebugMode(_Switch):
    """Debug mode: the pods come up and the launcher does not run mpirun."""

    replica_specs: list[DebugReplicaSpec] | None = _doc(
        "How each replica type starts in debug mode."
    )

    def spec_for(self, replica_type: str) -> DebugReplicaSpec | None:
        return next((s for s in self.replica_specs or [] if s.type == replica_type), None)


class PauseMode(_Switch):
    """Pause mode: the pods are deleted (the Secret, Service and ConfigMap stay) and
    recreated when it is switched off."""

    resume_specs: list[ResumeSpec] | None = _doc("How each replica type is recreated on resume.")

    def spec_for(self, replica_type: str) -> ResumeSpec | None:
        return next((s for s in self.resume_specs or [] if s.type == replica_type), None)


class RunMode(_Model):
    """Debug or pause the job instead of running it."""

    debug: DebugMode | None = _doc("Bring the pods up without running the MPI program.")
    pause: PauseMode | None = _doc("Delete the pods until pause is switched off.")


class MPIJobSpec(_Model):
    """Desired state of the T9k MPIJob."""

    worker: WorkerSpec | None = _doc("The workers and the MPI command. Required.")
    mca: dict[str, str] | None = _doc("Open MPI MCA parameters, passed as --mca key value.")
    mpi_home: str | None = _doc(
        "Directory of the MPI installation in the image: mpirun is <mpiHome>/bin/mpirun, "
        "run with --prefix <mpiHome>. Unset: mpirun from PATH."
    )
    ssh: SSHConfig = Field(
        default_factory=SSHConfig, description="Where the SSH keys and sshd are in the image."
    )
    run_policy: RunPolicy = Field(
        default_factory=RunPolicy, description="What happens to the pods once the job finished."
    )
    scheduler: SchedulePolicy | None = _doc("The scheduler of the job's pods.")
    run_mode: RunMode | None = _doc("Debug or pause the job instead of running it.")


class JobCondition(_Model):
    """One condition of the job."""

    type: str = Field(
        description=(
            "Initialized, Running, ReplicaFailure, Completed, Failed, Paused or Debugging."
        )
    )
    status: str = Field(description="True, False or Unknown.")
    reason: str | None = _doc("Machine-readable reason of the last transition.")
    message: str | None = _doc("Human-readable details of the last transition.")
    last_transition_time: str | None = _doc("When the condition last changed status.")


class Aggregate(_Model):
    """Pod counts of the job, by phase."""

    creating: int = Field(default=0, description="Pods being created.")
    pending: int = Field(default=0, description="Pending pods.")
    running: int = Field(default=0, description="Running pods.")
    succeeded: int = Field(default=0, description="Pods that succeeded.")
    failed: int = Field(default=0, description="Pods that failed.")
    unknown: int = Field(default=0, description="Pods in an unknown phase.")
    deleted: int = Field(default=0, description="Pods deleted.")


class ContainerStatus(_Model):
    """One container of a pod."""

    name: str | None = _doc("Name of the container.")
    container_phase: str = Field(description="Waiting, Running or Terminated.")
    exit_code: int | None = _doc("Exit code, once terminated.")


class ReplicaStatus(_Model):
    """One pod of a task."""

    name: str = Field(description="Name of the pod.")
    uid: str = Field(description="UID of the pod.")
    phase: str = Field(description="Phase of the pod.")
    containers: list[ContainerStatus] = Field(
        default_factory=list, description="The pod's containers."
    )


class Task(_Model):
    """The pods of one replica: the launcher or one worker."""

    replica_type: str = Field(description="launcher or worker.")
    replica_index: int = Field(description="Index of the replica (the worker's number).")
    replicas: list[ReplicaStatus] = Field(default_factory=list, description="The replica's pods.")


class MPIJobStatus(_Model):
    """Observed state of the T9k MPIJob, written by the operator."""

    phase: str | None = _doc(
        "Pending, Running, Debugging, Paused, Resuming, Succeeded, Failed or Unknown."
    )
    conditions: list[JobCondition] | None = _doc("Conditions of the job.")
    aggregate: Aggregate | None = _doc("Pod counts of the job, by phase.")
    tasks: list[Task] | None = _doc("Every replica's pods and containers.")


class MPIJob(ApiObject):
    """T9k MPIJob: worker pods and a launcher pod that runs mpirun on them."""

    api_version: str | None = Field(
        default=API_VERSION, description="Versioned schema of this object, " + API_VERSION + "."
    )
    kind: str | None = Field(
        default=KIND, description="The REST resource this object represents, MPIJob."
    )
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: MPIJobSpec = Field(
        default_factory=MPIJobSpec, description="Desired state of the T9k MPIJob."
    )
    status: MPIJobStatus | None = _doc("Observed state of the T9k MPIJob, written by the operator.")

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
