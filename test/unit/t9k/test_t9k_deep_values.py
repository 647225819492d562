"""T9k MPIJobs with a value nested 1,000 and more levels deep: ``cleanUpWorkers`` is
free-form in the CRD (a string or a boolean, so the API server takes any JSON there),
and the error that names it used to print the value with ``json.dumps``, which raised
RecursionError past about 1,000 levels; the sync then failed on every retry. Parsing
and validating report one error naming the field instead, at any depth."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from nesting import nested_list, nested_object

from mpi_operator.api import t9k
from mpi_operator.api.field_errors import MAX_PRINTED_DEPTH, InvalidObjectError, aggregate
from mpi_operator.api.limits import MAX_NESTING_DEPTH

Obj = dict[str, Any]
DEPTHS = [1_000, 1_020, 5_000]
NOT_PRINTED = f"nested more than {MAX_PRINTED_DEPTH} levels deep, not printed>"
TOO_DEEP = f"must be nested at most {MAX_NESTING_DEPTH} objects and lists deep"
EITHER = "input should be a valid string or a valid boolean"


def job(put: Callable[[Obj, Any], None], value: Any) -> Obj:
    obj: Obj = {
        "apiVersion": t9k.API_VERSION,
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": "default"},
        "spec": {
            "worker": {
                "replicas": 1,
                "cmd": ["./pi"],
                "template": {"spec": {"containers": [{"name": "mpi-worker"}]}},
            }
        },
    }
    put(obj, value)
    return obj


def errors_of(obj: Obj) -> list[str]:
    """The parse error's messages, else validate's (which runs validate_defaulted)."""
    try:
        parsed = t9k.set_defaults(t9k.parse(obj))
    except InvalidObjectError as err:
        return list(dict.fromkeys(str(e) for e in err.errors))
    errors = t9k.validate(parsed)
    return [aggregate(errors)] if errors else []


def clean_up_workers(obj: Obj, value: Any) -> None:
    obj["spec"]["runPolicy"] = {"cleanUpWorkers": value}


def worker(name: str) -> Callable[[Obj, Any], None]:
    return lambda obj, value: obj["spec"]["worker"].__setitem__(name, value)


# (case, where the value goes, how deep it is built, the error's start, what it says)
CASES: list[tuple[str, Callable[[Obj, Any], None], Callable[[int], Any], str, str]] = [
    (
        "cleanUpWorkers an object",
        clean_up_workers,
        nested_object,
        "spec.runPolicy.cleanUpWorkers: Invalid value: <an object " + NOT_PRINTED,
        EITHER,
    ),
    (
        "cleanUpWorkers a list",
        clean_up_workers,
        nested_list,
        "spec.runPolicy.cleanUpWorkers: Invalid value: <a list " + NOT_PRINTED,
        EITHER,
    ),
    (
        "worker replicas an object",
        worker("replicas"),
        nested_object,
        "spec.worker.replicas: Invalid value: <an object " + NOT_PRINTED,
        "input should be a valid integer",
    ),
    (
        "a command argument a list",
        lambda obj, value: worker("cmd")(obj, ["./pi", value]),
        nested_list,
        "spec.worker.cmd[1]: Invalid value: <a list " + NOT_PRINTED,
        "input should be a valid string",
    ),
    (
        "sshdPath an object",
        lambda obj, value: obj["spec"].__setitem__("ssh", {"sshdPath": value}),
        nested_object,
        "spec.ssh.sshdPath: Invalid value: <an object " + NOT_PRINTED,
        "input should be a valid string",
    ),
    (
        "the template (free-form in the CRD)",
        lambda obj, value: obj["spec"]["worker"]["template"]["spec"].__setitem__("x", value),
        nested_object,
        "spec.worker.template.spec.x.a.a",
        f"{TOO_DEEP} (counted from spec.worker.template)",
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


def test_a_shallow_bad_clean_up_policy_is_still_printed_once() -> None:
    """The str|bool union reports two errors; the field is named once, its value shown."""
    messages = errors_of(job(clean_up_workers, {"a": [1]}))
    assert messages == [f'spec.runPolicy.cleanUpWorkers: Invalid value: {{"a": [1]}}: {EITHER}']


@pytest.mark.parametrize("depth", DEPTHS)
def test_validate_copies_a_job_with_a_deep_unknown_field(depth: int) -> None:
    """``validate`` defaults a copy; it used to deep-copy (RecursionError at ~500)."""
    parsed = t9k.parse(
        job(lambda obj, value: obj["spec"].__setitem__("x", value), nested_object(depth))
    )
    assert t9k.validate(parsed) == []
    assert parsed.spec.ssh.sshd_path is None  # the copy was defaulted, not the job
