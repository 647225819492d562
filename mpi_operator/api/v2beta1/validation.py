"""Validation of v2beta1 MPIJobs with the reference operator's rules and messages.

Validation runs on a defaulted job, as upstream's does, and returns every
error at once so that one event tells the user everything to fix.
"""

from __future__ import annotations

import json
import re
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
from mpi_operator.api.v2beta1.defaults import set_defaults
from mpi_operator.api.v2beta1.elastic_policy_validation import elastic_policy_errors
from mpi_operator.api.v2beta1.failure_policy_validation import run_policy_errors
from mpi_operator.api.v2beta1.types import (
    CleanPodPolicy,
    ManagedBy,
    MPIImplementation,
    MPIJob,
    ReplicaSpec,
    ReplicaType,
    RestartPolicy,
    RunPolicy,
)

_DNS1035_MAX = 63
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE = re.compile(f"^{_DNS1035_FMT}$")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character "
    f"(e.g. 'my-name',  or 'abc-123', regex used for validation is '{_DNS1035_FMT}')"
)
_NEGATIVE_MSG = "must be greater than or equal to 0"

# Sorted, as Kubernetes lists supported values.
_CLEAN_POD_POLICIES = sorted(p.value for p in CleanPodPolicy)
_MPI_IMPLEMENTATIONS = sorted(i.value for i in MPIImplementation)
_RESTART_POLICIES = sorted((RestartPolicy.NEVER.value, RestartPolicy.ON_FAILURE.value))
_MANAGED_BY = sorted(m.value for m in ManagedBy)


def dns1035_label_errors(value: str) -> list[str]:
    errors = []
    if len(value) > _DNS1035_MAX:
        errors.append(f"must be no more than {_DNS1035_MAX} characters")
    if not _DNS1035_RE.match(value):
        errors.append(_DNS1035_MSG)
    return errors


def validate(job: MPIJob) -> list[FieldError]:
    """All field errors of the MPIJob once defaulted (a copy is defaulted; ``job`` is
    left as it is), as the operator reports them; empty when it is valid. Beyond the
    operator's rules (and the reference's, which ignore it), a replica type other than
    Launcher and Worker, a misspelt one (``Workr``), is an error naming it."""
    unknown = [
        not_supported(f"spec.mpiReplicaSpecs[{name}]", name, sorted(t.value for t in ReplicaType))
        for name in (job.spec.mpi_replica_specs or {})
        if name not in tuple(t.value for t in ReplicaType)
    ]
    # The templates' size and depth first (a template past them is not read further).
    # The defaulted copy shares the JSON values: a deep copy of one nested about 500
    # levels deep (a template, metadata, an unknown field) would raise RecursionError.
    limits = [
        error
        for name, spec in (job.spec.mpi_replica_specs or {}).items()
        if spec is not None
        for error in template_limit_errors(spec.template, f"spec.mpiReplicaSpecs[{name}].template")
    ]
    return unknown + (limits or validate_defaulted(set_defaults(copy_models(job))))


def validate_defaulted(job: MPIJob) -> list[FieldError]:
    """All field errors of an MPIJob already defaulted (the operator's own path)."""
    return _validate_name(job) + _validate_spec(job)


WORKER_REPLICAS_PATH = f"spec.mpiReplicaSpecs[{ReplicaType.WORKER.value}].replicas"


def limit_errors(job: MPIJob, cluster_domain: str = "") -> list[FieldError]:
    """Ours, beyond the reference's rules: the worker cap, and a ConfigMap (hostfile and
    discover_hosts.sh, ``cluster_domain`` appended to host names) the API server takes."""
    worker = job.replica_spec(ReplicaType.WORKER)
    replicas = (worker.replicas or 0) if worker is not None else 0
    errors = worker_cap_errors(WORKER_REPLICAS_PATH, replicas)
    return errors or config_map_errors(
        WORKER_REPLICAS_PATH,
        replicas,
        config_shape(job, cluster_domain),
        "the hostfile and discover_hosts.sh",
        "name, namespace, slotsPerWorker and mpiImplementation",
    )


def config_shape(job: MPIJob, cluster_domain: str = "") -> ConfigShape:
    """The size of ``builders.config.new_config_map``'s data once every worker runs:
    a hostfile line and an ``echo <host>`` line per worker (and for the launcher
    when it runs as a worker), after ``#!/bin/sh``."""
    # Host names: <pod>.<job>.<namespace>.svc[.<cluster domain>]
    domain = byte_length(f".{job.name}.{job.namespace}.svc")
    domain += byte_length(f".{cluster_domain}") if cluster_domain else 0
    slots = job.spec.slots_per_worker if job.spec.slots_per_worker is not None else 1
    implementation = job.spec.mpi_implementation or ""
    if implementation == MPIImplementation.OPEN_MPI:
        host_line = byte_length(f" slots={slots}\n")
    elif implementation in (MPIImplementation.INTEL, MPIImplementation.MPICH):
        host_line = byte_length(f":{slots}\n")
    else:
        host_line = -1  # no hostfile lines at all
    echo_line = byte_length("echo \n")
    lines_per_host = (host_line if host_line >= 0 else 0) + echo_line
    hosts_per_worker = 2 if host_line >= 0 else 1
    worker_host = byte_length(f"{job.name}-worker-") + domain
    fixed = byte_length("#!/bin/sh\n")
    if job.spec.run_launcher_as_worker:
        launcher_host = byte_length(f"{job.name}-launcher") + domain
        fixed += hosts_per_worker * launcher_host + lines_per_host
    return ConfigShape(
        fixed=fixed,
        per_worker=hosts_per_worker * worker_host + lines_per_host,
        index_times=hosts_per_worker,
    )


def _validate_name(job: MPIJob) -> list[FieldError]:
    worker = job.replica_spec(ReplicaType.WORKER)
    replicas = worker.replicas if worker is not None and worker.replicas else 1
    return worker_hostname_errors(job.name, replicas)


def worker_hostname_errors(name: str, replicas: int) -> list[FieldError]:
    """The last worker's hostname must be a DNS-1035 label, or no pod can be made."""
    hostname = f"{name}-worker-{max(replicas, 1) - 1}"
    errors = dns1035_label_errors(hostname)
    if not errors:
        return []
    detail = (
        f"will not able to create pod and service with invalid DNS label "
        f"{json.dumps(hostname)}: {', '.join(errors)}"
    )
    return [invalid("metadata.name", name, detail)]


def _validate_spec(job: MPIJob) -> list[FieldError]:
    spec = job.spec
    errors = _validate_replica_specs(job)
    if spec.slots_per_worker is None:
        errors.append(required("spec.slotsPerWorker", "must have number of slots per worker"))
    elif spec.slots_per_worker < 0:
        errors.append(invalid("spec.slotsPerWorker", spec.slots_per_worker, _NEGATIVE_MSG))
    errors += _validate_run_policy(spec.run_policy)
    errors += elastic_policy_errors(spec)
    if not spec.ssh_auth_mount_path:
        errors.append(
            required("spec.sshAuthMountPath", "must have a mount path for SSH credentials")
        )
    if spec.mpi_implementation not in _MPI_IMPLEMENTATIONS:
        errors.append(
            not_supported(
                "spec.mpiImplementation", spec.mpi_implementation or "", _MPI_IMPLEMENTATIONS
            )
        )
    return errors


def _validate_run_policy(policy: RunPolicy) -> list[FieldError]:
    path = "spec.runPolicy"
    errors: list[FieldError] = []
    if policy.clean_pod_policy is None:
        errors.append(required(f"{path}.cleanPodPolicy", "must have clean Pod policy"))
    elif policy.clean_pod_policy not in _CLEAN_POD_POLICIES:
        errors.append(
            not_supported(f"{path}.cleanPodPolicy", policy.clean_pod_policy, _CLEAN_POD_POLICIES)
        )
    for name, value in (
        ("ttlSecondsAfterFinished", policy.ttl_seconds_after_finished),
        ("activeDeadlineSeconds", policy.active_deadline_seconds),
        ("backoffLimit", policy.backoff_limit),
    ):
        if value is not None and value < 0:
            errors.append(invalid(f"{path}.{name}", value, _NEGATIVE_MSG))
    if policy.managed_by is not None and policy.managed_by not in _MANAGED_BY:
        errors.append(not_supported(f"{path}.managedBy", policy.managed_by, _MANAGED_BY))
    return errors + run_policy_errors(policy)


def _validate_replica_specs(job: MPIJob) -> list[FieldError]:
    path = "spec.mpiReplicaSpecs"
    if job.spec.mpi_replica_specs is None:
        return [required(path, "must have replica specs")]
    errors: list[FieldError] = []
    launcher_path = f"{path}[{ReplicaType.LAUNCHER.value}]"
    launcher = job.replica_spec(ReplicaType.LAUNCHER)
    if launcher is None:
        errors.append(required(launcher_path, "must have Launcher replica spec"))
    else:
        errors += _validate_replica_spec(launcher, launcher_path)
        if launcher.replicas is not None and launcher.replicas != 1:
            errors.append(invalid(f"{launcher_path}.replicas", launcher.replicas, "must be 1"))
    worker = job.replica_spec(ReplicaType.WORKER)
    if worker is not None:
        worker_path = f"{path}[{ReplicaType.WORKER.value}]"
        errors += _validate_replica_spec(worker, worker_path)
        if worker.replicas is not None and worker.replicas <= 0:
            errors.append(
                invalid(
                    f"{worker_path}.replicas",
                    worker.replicas,
                    "must be greater than or equal to 1",
                )
            )
    return errors


def _validate_replica_spec(spec: ReplicaSpec, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if spec.replicas is None:
        errors.append(required(f"{path}.replicas", "must define number of replicas"))
    if spec.restart_policy not in _RESTART_POLICIES:
        errors.append(
            not_supported(f"{path}.restartPolicy", spec.restart_policy or "", _RESTART_POLICIES)
        )
    pod_spec = spec.template.get("spec")
    containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    if not isinstance(containers, list) or not containers:
        errors.append(
            required(f"{path}.template.spec.containers", "must define at least one container")
        )
    # Ours: every pod repeats the template, so its size and nesting are bounded (the CRD
    # leaves its metadata free); its shape is read only then (its errors print values).
    limits = template_limit_errors(spec.template, f"{path}.template")
    return errors + (limits or template_errors(spec.template, f"{path}.template"))


def _pydantic_path(loc: tuple[int | str, ...]) -> str:
    """Turns a pydantic error location into a Kubernetes field path."""
    parts: list[str] = []
    keyed = False
    for item in loc:
        if keyed:
            parts[-1] += f"[{item}]"
            keyed = False
        elif isinstance(item, int):
            parts[-1] += f"[{item}]"
        else:
            parts.append(str(item))
            keyed = item in ("mpiReplicaSpecs", "replicaStatuses")
    return ".".join(parts)


def parse(obj: dict[str, Any]) -> MPIJob:
    """Parses wire JSON into an MPIJob, or raises InvalidObjectError naming the fields."""
    try:
        return MPIJob.model_validate(obj)
    except ValidationError as exc:
        errors = [
            invalid(_pydantic_path(err["loc"]), err.get("input"), err["msg"].lower())
            for err in exc.errors(include_url=False)
        ]
        raise InvalidObjectError(errors) from None
