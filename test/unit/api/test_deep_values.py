"""Kubeflow MPIJobs with a value nested 1,000 and more levels deep: parsing, defaulting
and validating them report one error naming the field instead of raising RecursionError
(an error message used to print the value with ``json.dumps``, an enum's error with
``repr``, and ``validate`` deep-copied the job; all three recurse once per level)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from nesting import nested_list, nested_object

from mpi_operator.api import v2beta1
from mpi_operator.api.field_errors import (
    MAX_PRINTED_DEPTH,
    InvalidObjectError,
    aggregate,
    nested_deeper_than,
    printed_value,
)
from mpi_operator.api.limits import MAX_NESTING_DEPTH
from mpi_operator.api.quantity import Quantity, QuantityError

Obj = dict[str, Any]
DEPTHS = [1_000, 1_020, 5_000]
NOT_PRINTED = f"nested more than {MAX_PRINTED_DEPTH} levels deep, not printed>"
TOO_DEEP = f"must be nested at most {MAX_NESTING_DEPTH} objects and lists deep"
WORKER = "spec.mpiReplicaSpecs[Worker]"


def job(put: Callable[[Obj, Any], None], value: Any) -> Obj:
    specs = {
        role: {"replicas": 1, "template": {"spec": {"containers": [{"name": "m"}]}}}
        for role in ("Launcher", "Worker")
    }
    obj: Obj = {
        "apiVersion": v2beta1.API_VERSION,
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": "default"},
        "spec": {"mpiReplicaSpecs": specs},
    }
    put(obj, value)
    return obj


def errors_of(obj: Obj) -> list[str]:
    """The messages the operator reports: the parse error, else validate's (the SDK's
    path, which also runs the operator's validate_defaulted and limit_errors)."""
    try:
        parsed = v2beta1.set_defaults(v2beta1.parse(obj))
    except InvalidObjectError as err:
        return list(dict.fromkeys(str(e) for e in err.errors))
    errors = v2beta1.validate(parsed) + v2beta1.limit_errors(parsed)
    return [aggregate(errors)] if errors else []


def run_policy(name: str) -> Callable[[Obj, Any], None]:
    return lambda obj, value: obj["spec"].setdefault("runPolicy", {}).__setitem__(name, value)


def spec(name: str) -> Callable[[Obj, Any], None]:
    return lambda obj, value: obj["spec"].__setitem__(name, value)


def worker(name: str) -> Callable[[Obj, Any], None]:
    return lambda obj, value: obj["spec"]["mpiReplicaSpecs"]["Worker"].__setitem__(name, value)


def template_metadata(obj: Obj, value: Any) -> None:
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["metadata"] = {"x": value}


# (case, where the value goes, how deep it is built, the error's start, what it says)
CASES: list[tuple[str, Callable[[Obj, Any], None], Callable[[int], Any], str, str]] = [
    (
        "cleanPodPolicy an object",
        run_policy("cleanPodPolicy"),
        nested_object,
        "spec.runPolicy.cleanPodPolicy: Invalid value: <an object " + NOT_PRINTED,
        "input should be 'none', 'running' or 'all'",
    ),
    (
        "managedBy a list",
        run_policy("managedBy"),
        nested_list,
        "spec.runPolicy.managedBy: Invalid value: <a list " + NOT_PRINTED,
        "input should be 'kubeflow.org/mpi-operator' or",
    ),
    (
        "slotsPerWorker an object",
        spec("slotsPerWorker"),
        nested_object,
        "spec.slotsPerWorker: Invalid value: <an object " + NOT_PRINTED,
        "input should be a valid integer",
    ),
    (
        "worker replicas a list",
        worker("replicas"),
        nested_list,
        f"{WORKER}.replicas: Invalid value: <a list " + NOT_PRINTED,
        "input should be a valid integer",
    ),
    (
        "failurePolicy rules an object",
        lambda obj, value: run_policy("failurePolicy")(obj, {"rules": value}),
        nested_object,
        "spec.runPolicy.failurePolicy.rules: Invalid value: <an object " + NOT_PRINTED,
        "input should be a valid list",
    ),
    (
        "template metadata (free-form in the CRD)",
        template_metadata,
        nested_object,
        f"{WORKER}.template.metadata.x.a.a",
        f"{TOO_DEEP} (counted from {WORKER}.template)",
    ),
    (
        "template metadata, lists",
        template_metadata,
        nested_list,
        f"{WORKER}.template.metadata.x[0][0]",
        TOO_DEEP,
    ),
]


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize(
    ("case", "put", "build", "start", "says"), CASES, ids=[c[0] for c in CASES]
)
def test_a_deep_value_is_one_error_naming_the_field(
    case: str,
    put: Callable[[Obj, Any], None],
    build: Callable[[int], Any],
    start: str,
    says: str,
    depth: int,
) -> None:
    messages = errors_of(job(put, build(depth)))
    assert len(messages) == 1, messages
    (message,) = messages
    assert message.startswith(start), message[:300]
    assert says in message, message[:300]
    assert len(message) < 2_000  # the value is not printed


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize(
    "put",
    [
        lambda obj, value: obj["metadata"].__setitem__("x", value),
        spec("unknownField"),
        lambda obj, value: obj.__setitem__("status", {"x": value}),
        lambda obj, value: obj["spec"]["mpiReplicaSpecs"].__setitem__("Extra", {"x": value}),
    ],
    ids=["metadata", "unknown field", "status", "unknown replica type"],
)
def test_validate_copies_a_job_with_a_deep_value_it_has_no_rule_for(
    put: Callable[[Obj, Any], None], depth: int
) -> None:
    """The CRD prunes these; a job built for the SDK may hold them. ``validate``
    defaults a copy, and used to deep-copy (RecursionError from about 500 levels)."""
    parsed = v2beta1.parse(job(put, nested_object(depth)))
    # The one error: a replica type other than Launcher and Worker, named by validate().
    extra = (
        ["spec.mpiReplicaSpecs[Extra]"] if "Extra" in (parsed.spec.mpi_replica_specs or {}) else []
    )
    assert [e.field for e in v2beta1.validate(parsed)] == extra
    assert parsed.spec.slots_per_worker is None  # the copy was defaulted, not the job
    assert parsed.spec.run_policy.clean_pod_policy is None


@pytest.mark.parametrize("depth", DEPTHS)
def test_nested_deeper_than_measures_any_depth(depth: int) -> None:
    for value in (nested_object(depth), nested_list(depth), [1, {"a": nested_list(depth)}]):
        assert nested_deeper_than(value, depth - 1)
        assert not nested_deeper_than(value, depth + 2)
        assert printed_value(value).endswith(NOT_PRINTED)
    assert printed_value(nested_object(MAX_PRINTED_DEPTH)).startswith('{"a": {"a": ')
    assert not nested_deeper_than("x", 0)


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_quantity_error_names_the_type_of_a_deep_value(depth: int) -> None:
    """minResources and resource limits are read as quantities by the builders."""
    with pytest.raises(QuantityError, match="not dict"):
        Quantity.from_json(nested_object(depth))
