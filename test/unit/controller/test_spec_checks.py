"""SpecChecks: a key's field errors are checked once per object, anew for another."""

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
