"""Models of the ``kubeflow.org/v2beta1`` MPIJob API.

Design notes:

* JSON names are the upstream ones (camelCase aliases); Python attributes are
  snake_case. ``populate_by_name`` lets code build models either way.
* Read from the wire, every model keeps extra fields, and ``metadata`` and pod
  templates are plain dicts, so any MPIJob JSON survives ``from_dict``/``to_dict``
  unchanged, including fields of newer Kubernetes versions we don't know.
* Enumerated fields are typed with the enums below (:data:`Enumerated`). Read from
  the wire, an unknown value is kept as a string so that it reaches validation and
  comes back as a field error naming the field; built in Python, it is refused at
  once, as is an unknown field (:mod:`mpi_operator.api.object_model`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field, ValidationInfo, model_validator

from mpi_operator.api.object_model import (
    ApiModel,
    ApiObject,
    Enumerated,
    EnumeratedOrEmpty,
    is_strict,
    unknown_names,
)

GROUP = "kubeflow.org"
VERSION = "v2beta1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "MPIJob"
PLURAL = "mpijobs"

OPERATOR_NAME = "mpi-operator"
ENV_KUBEFLOW_NAMESPACE = "KUBEFLOW_NAMESPACE"

REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
# Ours: the failure policy's restart that made a pod or launcher Job (absent: none yet).
RESTART_ATTEMPT_LABEL = "training.kubeflow.org/restart-attempt"


class CleanPodPolicy(StrEnum):
    NONE = "None"
    RUNNING = "Running"
    ALL = "All"


class RestartPolicy(StrEnum):
    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"
    EXIT_CODE = "ExitCode"


class MPIImplementation(StrEnum):
    OPEN_MPI = "OpenMPI"
    INTEL = "Intel"
    MPICH = "MPICH"


class LauncherCreationPolicy(StrEnum):
    AT_STARTUP = "AtStartup"
    WAIT_FOR_WORKERS_READY = "WaitForWorkersReady"


class ReplicaType(StrEnum):
    LAUNCHER = "Launcher"
    WORKER = "Worker"


class ConditionType(StrEnum):
    CREATED = "Created"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUCCEEDED = "Succeeded"
    SUSPENDED = "Suspended"
    FAILED = "Failed"


class ManagedBy(StrEnum):
    KUBEFLOW = "kubeflow.org/mpi-operator"
    MULTIKUEUE = "kueue.x-k8s.io/multikueue"


class FailurePolicyAction(StrEnum):
    """Ours (not in the reference API): what a failure policy rule does."""

    RESTART_JOB = "RestartJob"
    #: Replace only the failed worker pods and the launcher; healthy workers keep running.
    RESTART_FAILED = "RestartFailed"
    FAIL_JOB = "FailJob"
    IGNORE = "Ignore"


class TTLPolicy(StrEnum):
    """Ours: what runPolicy.ttlSecondsAfterFinished deletes (Launcher: the reference's)."""

    LAUNCHER = "Launcher"
    MPIJOB = "MPIJob"


class ExitCodesOperator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"


_Model = ApiModel


class SchedulingPolicy(_Model):
    min_available: int | None = None
    queue: str | None = None
    min_resources: dict[str, Any] | None = None
    priority_class: str | None = None
    schedule_timeout_seconds: int | None = None


class OnExitCodes(_Model):
    container_name: str | None = None
    operator: Enumerated[ExitCodesOperator] | None = None
    values: list[int] | None = None


class OnPodCondition(_Model):
    type: str | None = None
    status: str | None = None


class FailurePolicyRule(_Model):
    name: str | None = None
    action: Enumerated[FailurePolicyAction] | None = None
    target_replica_types: list[Enumerated[ReplicaType]] | None = None
    on_exit_codes: OnExitCodes | None = None
    on_termination_reasons: list[str] | None = None
    on_pod_reasons: list[str] | None = None
    on_pod_conditions: list[OnPodCondition] | None = None


class FailurePolicy(_Model):
    """Ours (not in the reference API), after JobSet's failurePolicy and batch/v1's
    podFailurePolicy: what a failed launcher or worker pod does to the job."""

    max_restarts: int | None = None
    rules: list[FailurePolicyRule] | None = None


class RunPolicy(_Model):
    clean_pod_policy: Enumerated[CleanPodPolicy] | None = None
    ttl_seconds_after_finished: int | None = None
    active_deadline_seconds: int | None = None
    backoff_limit: int | None = None
    scheduling_policy: SchedulingPolicy | None = None
    suspend: bool | None = None
    managed_by: Enumerated[ManagedBy] | None = None
    failure_policy: FailurePolicy | None = None
    ttl_seconds_after_finished_policy: Enumerated[TTLPolicy] | None = None
    workers_ready_timeout_seconds: int | None = None


class ReplicaSpec(_Model):
    replicas: int | None = None
    template: dict[str, Any] = Field(default_factory=dict)
    restart_policy: EnumeratedOrEmpty[RestartPolicy] | None = None


class ElasticPolicy(_Model):
    """Ours (not in the reference API): the bounds of the worker count, within which
    ``kubectl scale`` or a HorizontalPodAutoscaler may move it (the /scale subresource)."""

    min_replicas: int | None = None
    max_replicas: int | None = None
    below_min_timeout_seconds: int | None = None


class MPIJobSpec(_Model):
    slots_per_worker: int | None = None
    run_launcher_as_worker: bool | None = None
    run_policy: RunPolicy = Field(default_factory=RunPolicy)
    mpi_replica_specs: dict[str, ReplicaSpec | None] | None = None
    ssh_auth_mount_path: str | None = None
    launcher_creation_policy: EnumeratedOrEmpty[LauncherCreationPolicy] | None = None
    mpi_implementation: Enumerated[MPIImplementation] | None = None
    elastic_policy: ElasticPolicy | None = None

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_replica_types(cls, data: Any, info: ValidationInfo) -> Any:
        """Built in Python, a replica type other than Launcher and Worker (``Workr``) is
        refused, naming it; read from the wire it is kept (the operator ignores it)."""
        if not isinstance(data, dict) or not is_strict(info):
            return data
        for key in ("mpiReplicaSpecs", "mpi_replica_specs"):
            specs = data.get(key)
            if not isinstance(specs, dict):
                continue
            unknown = sorted(str(k) for k in specs if k not in _REPLICA_TYPES)
            if unknown:
                raise unknown_names(
                    cls.__name__,
                    [((key, k), specs[k], unknown_replica_type(k)) for k in unknown],
                )
        return data


_REPLICA_TYPES = tuple(t.value for t in ReplicaType)


def unknown_replica_type(name: str) -> str:
    """The message for a replica type that is neither Launcher nor Worker."""
    return f"unknown replica type {name!r}; one of {', '.join(_REPLICA_TYPES)}"


class JobCondition(_Model):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_update_time: str | None = None
    last_transition_time: str | None = None


class ReplicaStatus(_Model):
    active: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    label_selector: dict[str, Any] | None = None
    selector: str | None = None


class PodFailure(_Model):
    """Not in the reference API: the pod whose failure failed or restarted the job."""

    pod: str | None = None
    replica_type: str | None = None
    container: str | None = None
    exit_code: int | None = None
    reason: str | None = None
    pod_reason: str | None = None
    message: str | None = None
    time: str | None = None


class JobStatus(_Model):
    conditions: list[JobCondition] | None = None
    replica_statuses: dict[str, ReplicaStatus | None] | None = None
    start_time: str | None = None
    completion_time: str | None = None
    last_reconcile_time: str | None = None
    # Not in the reference API: the type of the latest true condition, written by the
    # operator for `kubectl get mpijobs` (a printer column's JSONPath cannot select it).
    state: str | None = None
    # Not in the reference API either: restarts of the whole job by its failure policy,
    # and the pod failure that failed or last restarted the job.
    restart_count: int | None = None
    last_failure: PodFailure | None = None


class MPIJob(ApiObject):
    api_version: str | None = API_VERSION
    kind: str | None = KIND
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: MPIJobSpec = Field(default_factory=MPIJobSpec)
    status: JobStatus | None = None

    def replica_spec(self, replica_type: ReplicaType) -> ReplicaSpec | None:
        specs = self.spec.mpi_replica_specs
        return None if specs is None else specs.get(replica_type.value)


class MPIJobList(_Model):
    api_version: str | None = API_VERSION
    kind: str | None = "MPIJobList"
    metadata: dict[str, Any] = Field(default_factory=dict)
    items: list[MPIJob] = Field(default_factory=list)
