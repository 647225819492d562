"""Validation of defaulted T9k MPIJobs; every error at once, in Kubernetes' shape."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from mpi_operator.api.field_errors import (
    FieldError,
    InvalidObjectError,
    invalid,
    not_supported,
    required,
)
from mpi_operator.api.limits import (
    ConfigShape,
    byte_length,
    config_map_errors,
    template_limit_errors,
    worker_cap_errors,
)
from mpi_operator.api.object_model import copy_models
from mpi_operator.api.pod_template import template_errors
from mpi_operator.api.t9k.defaults import set_defaults
from mpi_operator.api.t9k.slots import gpu_slots
from mpi_operator.api.t9k.types import CleanUpPolicy, MPIJob, ReplicaType
from mpi_operator.api.v2beta1.validation import worker_hostname_errors

_CLEAN_UP_POLICIES = sorted(p.value for p in CleanUpPolicy)
_REPLICA_TYPES = sorted(t.value for t in ReplicaType)
MAX_PRIORITY = 100
WORKER_REPLICAS_PATH = "spec.worker.replicas"


def validate(job: MPIJob) -> list[FieldError]:
    """All field errors of the T9k MPIJob once defaulted (a copy is defaulted; ``job`` is
    left as it is); empty when it is valid. The copy shares the JSON values, which
    defaulting leaves alone: a deep copy of one nested about 500 levels deep (the
    template, metadata, an unknown field) raises RecursionError."""
    return validate_defaulted(set_defaults(copy_models(job)))


def validate_defaulted(job: MPIJob) -> list[FieldError]:
    """All field errors of a T9k MPIJob already defaulted (the operator's own path)."""
    errors = _validate_name(job)
    spec = job.spec
    worker = spec.worker
    if worker is None:
        errors.append(required("spec.worker", "must have a worker spec"))
    else:
        if worker.replicas is not None and worker.replicas < 1:
            errors.append(
                invalid(WORKER_REPLICAS_PATH, worker.replicas, "must be greater than or equal to 1")
            )
        if not worker.cmd:
            errors.append(required("spec.worker.cmd", "must give the command mpirun runs"))
        # Bounded first (every pod repeats the template); its shape is read only then.
        shape = template_limit_errors(worker.template, "spec.worker.template") or template_errors(
            worker.template, "spec.worker.template"
        )
        pod_spec = worker.template.get("spec") if isinstance(worker.template, dict) else None
        containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
        if not isinstance(containers, list) or not containers:
            shape.append(
                required(
                    "spec.worker.template.spec.containers", "must define at least one container"
                )
            )
        # The limits read the template (the GPU slots): only once its shape is right.
        errors += shape or limit_errors(job)
    for key in spec.mca or {}:
        if not key:
            errors.append(invalid("spec.mca", key, "keys must not be empty"))
    for name, value in (
        ("sshAuthMountPath", spec.ssh.ssh_auth_mount_path),
        ("sshdPath", spec.ssh.sshd_path),
    ):
        if not value:
            errors.append(required(f"spec.ssh.{name}", "must not be empty"))
        elif not value.startswith("/"):
            errors.append(invalid(f"spec.ssh.{name}", value, "must be an absolute path"))
    policy = spec.run_policy.clean_up_policy()
    if policy not in _CLEAN_UP_POLICIES:
        errors.append(
            not_supported(
                "spec.runPolicy.cleanUpWorkers",
                spec.run_policy.clean_up_workers,
                _CLEAN_UP_POLICIES,
            )
        )
    errors += _validate_scheduler(job)
    errors += _validate_run_mode(job)
    return errors


def limit_errors(job: MPIJob) -> list[FieldError]:
    """The worker cap shared with the Kubeflow API, and a hostfile the API server takes."""
    replicas = job.worker_replicas
    return worker_cap_errors(WORKER_REPLICAS_PATH, replicas) or config_map_errors(
        WORKER_REPLICAS_PATH,
        replicas,
        config_shape(job),
        "the hostfile",
        "name, namespace and GPU slots",
    )


def config_shape(job: MPIJob) -> ConfigShape:
    """The size of ``builders.t9k.config.new_config_map``'s data: one line
    ``<pod>.<job>.<namespace>.svc slots=<n>`` per worker."""
    host = byte_length(f"{job.name}-worker-.{job.name}.{job.namespace}.svc")
    line = host + byte_length(f" slots={gpu_slots(job)}\n")
    return ConfigShape(fixed=0, per_worker=line, index_times=1)


def _validate_name(job: MPIJob) -> list[FieldError]:
    return worker_hostname_errors(job.name, job.worker_replicas)


def _validate_scheduler(job: MPIJob) -> list[FieldError]:
    scheduler = job.t9k_scheduler
    if scheduler is None:
        return []
    path = "spec.scheduler.t9kScheduler"
    errors: list[FieldError] = []
    if not scheduler.queue:
        errors.append(required(f"{path}.queue", "must name the queue"))
    priority = scheduler.priority
    if priority is not None and not 0 <= priority <= MAX_PRIORITY:
        errors.append(
            invalid(f"{path}.priority", priority, f"must be between 0 and {MAX_PRIORITY}")
        )
    return errors


def _validate_run_mode(job: MPIJob) -> list[FieldError]:
    mode = job.spec.run_mode
    if mode is None:
        return []
    errors: list[FieldError] = []
    specs: list[tuple[str, list[Any]]] = []
    if mode.debug is not None:
        specs.append(("spec.runMode.debug.replicaSpecs", list(mode.debug.replica_specs or [])))
    if mode.pause is not None:
        specs.append(("spec.runMode.pause.resumeSpecs", list(mode.pause.resume_specs or [])))
    for path, items in specs:
        seen: set[str] = set()
        for i, item in enumerate(items):
            if item.type not in _REPLICA_TYPES:
                errors.append(not_supported(f"{path}[{i}].type", item.type, _REPLICA_TYPES))
            elif item.type in seen:
                errors.append(invalid(f"{path}[{i}].type", item.type, "duplicate replica type"))
            seen.add(item.type)
    return errors


def _pydantic_path(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int) and parts:
            parts[-1] += f"[{item}]"
        else:
            parts.append(str(item))
    return ".".join(parts)


def parse(obj: dict[str, Any]) -> MPIJob:
    """Parses wire JSON into a T9k MPIJob, or raises InvalidObjectError naming the fields."""
    try:
        return MPIJob.model_validate(obj)
    except ValidationError as exc:
        # A str|bool union (cleanUpWorkers) reports one error per member: one error
        # names the field, with what each member expected ("a valid string or ...").
        found: dict[str, tuple[Any, list[str]]] = {}
        for err in exc.errors(include_url=False):
            loc = err["loc"]
            if loc and loc[-1] in ("str", "bool"):
                loc = loc[:-1]
            entry = found.setdefault(_pydantic_path(loc), (err.get("input"), []))
            entry[1].append(err["msg"].lower())
        errors = [
            invalid(path, value, _either(messages)) for path, (value, messages) in found.items()
        ]
        raise InvalidObjectError(errors) from None


def _either(messages: list[str]) -> str:
    """``input should be a valid string or a valid boolean`` from a union's messages."""
    first, *rest = list(dict.fromkeys(messages))
    prefix = "input should be "
    if first.startswith(prefix):
        rest = [m.removeprefix(prefix) for m in rest]
    return " or ".join([first, *rest])
