"""SpecChecks: a key's field errors are checked once per version of its spec (its uid and
generation), or once per object where it has none; anew for another."""

from __future__ import annotations

from mpi_operator.api.field_errors import FieldError, required
from mpi_operator.controller.core.spec_checks import SpecChecks


def test_the_same_object_is_checked_once_another_anew_and_forgotten_on_clear() -> None:
    checks = SpecChecks()
    calls: list[str] = []
    error = required("spec.worker.cmd", "the command")

    def check() -> list[FieldError]:
        calls.append("checked")
        return [error]

    first: dict[str, object] = {"spec": {}}
    assert checks.errors("ns/a", first, check) == [error]
    assert checks.errors("ns/a", first, check) == [error]
    assert len(calls) == 1
    # An equal object is another object: the informer replaced it, so it is checked.
    assert checks.errors("ns/a", {"spec": {}}, check) == [error]
    assert len(calls) == 2
    # Keys are apart; clear forgets.
    assert checks.errors("ns/b", first, check) == [error]
    assert len(calls) == 3
    checks.clear("ns/b")
    checks.errors("ns/b", first, check)
    assert len(calls) == 4


def test_a_caller_changing_the_returned_list_does_not_change_what_is_kept() -> None:
    checks = SpecChecks()
    obj: dict[str, object] = {"spec": {}}
    kept = checks.errors("ns/a", obj, lambda: [])
    kept.append(required("spec", "x"))
    assert checks.errors("ns/a", obj, lambda: [required("spec", "never")]) == []


def _job(uid: str, generation: object, **status: object) -> dict[str, object]:
    return {"metadata": {"uid": uid, "generation": generation}, "spec": {}, "status": status}


class _Counted:
    """A check with no errors that counts its runs."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self) -> list[FieldError]:
        self.runs += 1
        return []


def test_a_new_object_of_the_same_uid_and_generation_is_not_checked_again() -> None:
    checks, check = SpecChecks(), _Counted()
    checks.errors("ns/a", _job("u1", 1), check)
    # Our own status write, or a label added: a new object, the same spec's version.
    checks.errors("ns/a", _job("u1", 1, phase="Running"), check)
    assert check.runs == 1
    # The spec changed (the API server raised the generation): checked anew.
    checks.errors("ns/a", _job("u1", 2), check)
    assert check.runs == 2
    # Deleted and made again under the same name: another uid, checked anew.
    checks.errors("ns/a", _job("u2", 2), check)
    assert check.runs == 3


def test_a_generation_that_is_no_integer_falls_back_to_the_object() -> None:
    checks, check = SpecChecks(), _Counted()
    for generation in ("1", True, None):
        checks.errors("ns/a", _job("u1", generation), check)
        checks.errors("ns/a", _job("u1", generation), check)
    assert check.runs == 6
