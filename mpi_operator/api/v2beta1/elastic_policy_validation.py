"""Validation of ``spec.elasticPolicy`` (ours, not in the reference API): the bounds
of the worker count that ``kubectl scale`` and a HorizontalPodAutoscaler move within.

The CRD's CEL rules (:mod:`mpi_operator.api.crdgen.declarations`) refuse the same
objects at admission, scale requests included; these checks give an MPIJob that got
past them anyway (a CRD installed without them) the same errors, as an event.
"""

from __future__ import annotations

from mpi_operator.api.field_errors import FieldError, invalid
from mpi_operator.api.limits import MAX_WORKER_REPLICAS
from mpi_operator.api.v2beta1.types import MPIJobSpec, ReplicaType

PATH = "spec.elasticPolicy"
WORKER_REPLICAS_PATH = f"spec.mpiReplicaSpecs[{ReplicaType.WORKER.value}].replicas"


def elastic_policy_errors(spec: MPIJobSpec) -> list[FieldError]:
    policy = spec.elastic_policy
    if policy is None:
        return []
    low, high = policy.min_replicas, policy.max_replicas
    errors: list[FieldError] = []
    if low is not None and low < 1:
        errors.append(invalid(f"{PATH}.minReplicas", low, "must be greater than or equal to 1"))
    if high is not None and high > MAX_WORKER_REPLICAS:
        errors.append(
            invalid(f"{PATH}.maxReplicas", high, f"must be no more than {MAX_WORKER_REPLICAS}")
        )
    if low is not None and high is not None and low > high:
        errors.append(
            invalid(f"{PATH}.minReplicas", low, f"must be no more than {PATH}.maxReplicas")
        )
    timeout = policy.below_min_timeout_seconds
    if timeout is not None and timeout < 0:
        errors.append(
            invalid(f"{PATH}.belowMinTimeoutSeconds", timeout, "must be greater than or equal to 0")
        )
    worker = (spec.mpi_replica_specs or {}).get(ReplicaType.WORKER.value)
    replicas = worker.replicas if worker is not None else None
    if replicas is not None and low is not None and replicas < low:
        errors.append(
            invalid(WORKER_REPLICAS_PATH, replicas, f"must be at least {PATH}.minReplicas ({low})")
        )
    if replicas is not None and high is not None and replicas > high:
        errors.append(
            invalid(
                WORKER_REPLICAS_PATH, replicas, f"must be no more than {PATH}.maxReplicas ({high})"
            )
        )
    return errors
