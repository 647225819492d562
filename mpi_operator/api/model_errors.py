"""The errors of a model built in Python, which are the SDK's own: the base
:class:`SDKError` and :class:`InvalidSpecError` are defined here, beside the models, so
that ``v2beta1.MPIJobSpec(slots_per_workr=2)`` raises an ``SDKError`` as every call of
the SDK does; :mod:`mpi_operator.sdk.errors` re-exports them with the rest.

Only the Python path raises them (a model's constructor, ``from_dict(obj,
strict=True)``); the wire path the operator uses (``from_dict(obj)``,
``model_validate``) keeps raising pydantic's ``ValidationError``.
"""

from __future__ import annotations

from pydantic import ValidationError


class SDKError(Exception):
    """Base of every error the SDK raises."""


class InvalidArgumentError(SDKError, ValueError):
    """An argument the SDK refused before any request."""


class InvalidSpecError(InvalidArgumentError):
    """The job was refused before any request (or by the API server's strict field
    validation); :attr:`fields` name what is wrong."""

    def __init__(self, message: str, fields: list[str] | None = None) -> None:
        super().__init__(message)
        self.fields = fields or []
        """The paths of the refused fields (``spec.runPolicy.cleanPodPolicy``, or an
        unknown field's own path, ``spec.runPolicy.cleanPodPolicyy``), if any."""


def field_path(loc: tuple[int | str, ...]) -> str:
    """pydantic's error location as a field path (``spec.runPolicy.cleanPodPolicy``)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif "[" in part or "(" in part:  # a validator's or a type's name, not a field
            continue
        else:
            out += f".{part}" if out else part
    return out


def spec_error(error: ValidationError, what: str, prefix: tuple[str, ...] = ()) -> InvalidSpecError:
    """``error`` as an :class:`InvalidSpecError` naming each field; ``what`` starts its
    message (``MPIJob refused``), ``prefix`` the fields' paths."""
    errors = error.errors(include_url=False)
    fields = [field_path((*prefix, *e["loc"])) for e in errors]
    details = "; ".join(f"{f or '(top)'}: {e['msg']}" for f, e in zip(fields, errors, strict=True))
    refused = InvalidSpecError(f"{what}: {details}", fields)
    refused.__cause__ = error
    return refused
