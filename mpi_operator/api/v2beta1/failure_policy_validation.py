"""Validation of ``spec.runPolicy.failurePolicy``, ``ttlSecondsAfterFinishedPolicy`` and
``workersReadyTimeoutSeconds`` (ours, not in the reference API).

The CRD's schema and CEL rules reject the same mistakes at admission; this catches
MPIJobs stored before the CRD had them, and names every field at once.
"""

from __future__ import annotations

from mpi_operator.api.field_errors import FieldError, invalid, not_supported, required
from mpi_operator.api.v2beta1.types import (
    ExitCodesOperator,
    FailurePolicy,
    FailurePolicyAction,
    FailurePolicyRule,
    ReplicaType,
    RunPolicy,
    TTLPolicy,
)

PATH = "spec.runPolicy.failurePolicy"
MAX_RULES = 20
MAX_VALUES = 255
_ACTIONS = sorted(a.value for a in FailurePolicyAction)
_OPERATORS = sorted(o.value for o in ExitCodesOperator)
_REPLICA_TYPES = sorted(r.value for r in ReplicaType)
_CONDITION_STATUSES = ["False", "True", "Unknown"]


_TTL_POLICIES = sorted(p.value for p in TTLPolicy)


def run_policy_errors(run_policy: RunPolicy) -> list[FieldError]:
    errors = failure_policy_errors(run_policy.failure_policy)
    ttl_policy = run_policy.ttl_seconds_after_finished_policy
    if ttl_policy is not None and ttl_policy not in _TTL_POLICIES:
        path = "spec.runPolicy.ttlSecondsAfterFinishedPolicy"
        errors.append(not_supported(path, ttl_policy, _TTL_POLICIES))
    timeout = run_policy.workers_ready_timeout_seconds
    if timeout is not None and timeout < 0:
        path = "spec.runPolicy.workersReadyTimeoutSeconds"
        errors.append(invalid(path, timeout, "must be greater than or equal to 0"))
    return errors


def failure_policy_errors(policy: FailurePolicy | None) -> list[FieldError]:
    if policy is None:
        return []
    errors: list[FieldError] = []
    if policy.max_restarts is not None and policy.max_restarts < 0:
        errors.append(
            invalid(
                f"{PATH}.maxRestarts", policy.max_restarts, "must be greater than or equal to 0"
            )
        )
    rules = policy.rules or []
    if len(rules) > MAX_RULES:
        errors.append(invalid(f"{PATH}.rules", len(rules), f"must have at most {MAX_RULES} items"))
    names: set[str] = set()
    for i, rule in enumerate(rules):
        path = f"{PATH}.rules[{i}]"
        errors += _rule_errors(rule, path)
        if rule.name:
            if rule.name in names:
                errors.append(invalid(f"{path}.name", rule.name, "must be unique"))
            names.add(rule.name)
    return errors


def _list_errors(values: list[str] | None, path: str) -> list[FieldError]:
    if values is None:
        return []
    errors = [required(f"{path}[{i}]", "must not be empty") for i, v in enumerate(values) if not v]
    if len(values) > MAX_VALUES:
        errors.append(invalid(path, len(values), f"must have at most {MAX_VALUES} items"))
    return errors


def _rule_errors(rule: FailurePolicyRule, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not rule.action:
        errors.append(required(f"{path}.action", "must have an action"))
    elif rule.action not in _ACTIONS:
        errors.append(not_supported(f"{path}.action", rule.action, _ACTIONS))
    for i, replica_type in enumerate(rule.target_replica_types or []):
        if replica_type not in _REPLICA_TYPES:
            errors.append(
                not_supported(f"{path}.targetReplicaTypes[{i}]", replica_type, _REPLICA_TYPES)
            )
    errors += _list_errors(rule.on_termination_reasons, f"{path}.onTerminationReasons")
    errors += _list_errors(rule.on_pod_reasons, f"{path}.onPodReasons")
    codes = rule.on_exit_codes
    if codes is not None:
        where = f"{path}.onExitCodes"
        if codes.operator not in _OPERATORS:
            errors.append(not_supported(f"{where}.operator", codes.operator or "", _OPERATORS))
        if not codes.values:
            errors.append(required(f"{where}.values", "must have at least one exit code"))
        elif len(codes.values) > MAX_VALUES:
            errors.append(
                invalid(
                    f"{where}.values", len(codes.values), f"must have at most {MAX_VALUES} items"
                )
            )
    for i, condition in enumerate(rule.on_pod_conditions or []):
        where = f"{path}.onPodConditions[{i}]"
        if not condition.type:
            errors.append(required(f"{where}.type", "must have a pod condition type"))
        if condition.status is not None and condition.status not in _CONDITION_STATUSES:
            errors.append(not_supported(f"{where}.status", condition.status, _CONDITION_STATUSES))
    return errors
