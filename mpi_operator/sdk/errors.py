"""Typed errors of the SDK: mistakes caught before a request, an API server that cannot
be reached, its answers by kind, and the outcomes of a wait.

Every error the SDK's clients raise is an :class:`SDKError`:

* :class:`InvalidSpecError` (also a ``ValueError``): the job was refused before any
  request: an unknown field, a value outside an enumeration, a wrong type, the other
  MPIJob kind, or a YAML file without exactly one job; :class:`InvalidArgumentError`
  for another argument (an unknown condition to wait for).
* :class:`SDKConnectionError` (also a ``ConnectionError``): the API server could not
  be reached (refused, unresolvable, TLS failure), or no configuration to reach it was
  found; :class:`SDKTimeoutError` (also a ``TimeoutError``) when it did not connect or
  answer within the request timeout.
* :class:`ApiError`: the API server answered with an error, or one of its subclasses
  when its kind is one a caller acts on: :class:`NotFoundError` (404),
  :class:`AlreadyExistsError` (409 ``AlreadyExists``), :class:`ConflictError` (other
  409s), :class:`ForbiddenError` (403) and :class:`InvalidError` (422, with the fields
  the API server named).
* :class:`WaitTimeoutError`, :class:`JobFailedError`, :class:`LogsUnavailableError`:
  the outcomes of waiting for a job or its logs.

Building a model directly (``v2beta1.RunPolicy(clean_pod_policy="Sometimes")``, or
``v2beta1.MPIJob.from_dict(obj, strict=True)``) raises :class:`InvalidSpecError` too,
naming the fields (:mod:`mpi_operator.api.model_errors` defines it beside the models).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from mpi_operator.api.model_errors import InvalidArgumentError, InvalidSpecError, SDKError

__all__ = [
    "AlreadyExistsError",
    "ApiError",
    "ConflictError",
    "FieldCause",
    "ForbiddenError",
    "InvalidArgumentError",
    "InvalidError",
    "InvalidSpecError",
    "JobFailedError",
    "LogsUnavailableError",
    "NotFoundError",
    "SDKConnectionError",
    "SDKError",
    "SDKTimeoutError",
    "WaitTimeoutError",
    "from_api_exception",
]


class SDKConnectionError(SDKError, ConnectionError):
    """The API server could not be reached, or there is no configuration to reach it."""


class SDKTimeoutError(SDKConnectionError, TimeoutError):
    """The API server did not connect or answer within the request timeout (the
    client's ``request_timeout``, or the call's)."""


@dataclass(frozen=True)
class FieldCause:
    """One reason the API server gave for refusing an object (``details.causes[]``)."""

    field: str
    """The field's path, e.g. ``spec.mpiReplicaSpecs[Launcher].replicas``."""
    message: str
    reason: str = ""


class ApiError(SDKError):
    """The API server answered with an error status."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")
        self.status = status
        self.reason = reason
        """The Status object's ``reason`` (``NotFound``, ``Invalid``...), else the HTTP reason."""
        self.message = message
        self.body = body or {}
        """The Status object as the API server sent it (empty when it sent none)."""


class NotFoundError(ApiError):
    """404: the object (or its namespace, or its kind's CRD) does not exist."""


class AlreadyExistsError(ApiError):
    """409 AlreadyExists: an object of that name exists."""


class ConflictError(ApiError):
    """409 Conflict: the object changed since it was read."""


class ForbiddenError(ApiError):
    """403: RBAC (or an admission plugin) does not allow the request."""


class InvalidError(ApiError):
    """422: the object was refused; :attr:`causes` name the fields."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        body: dict[str, Any] | None = None,
        causes: list[FieldCause] | None = None,
    ) -> None:
        super().__init__(status, reason, message, body=body)
        self.causes = causes or []

    @property
    def fields(self) -> list[str]:
        """The paths of the refused fields, in the API server's order."""
        return [c.field for c in self.causes if c.field]


class WaitTimeoutError(SDKError, TimeoutError):
    """The job did not reach the awaited condition in time; :attr:`job` is the last seen."""

    def __init__(self, message: str, job: Any) -> None:
        super().__init__(message)
        self.job = job


class JobFailedError(SDKError):
    """The job failed while another condition was awaited; :attr:`job` is the failed job."""

    def __init__(self, message: str, job: Any) -> None:
        super().__init__(message)
        self.job = job


class LogsUnavailableError(SDKError):
    """The launcher pod has no logs to give yet (not created, or never started)."""


def _status_body(raw: Any) -> dict[str, Any]:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if not isinstance(raw, str) or not raw:
        return {}
    try:
        body = json.loads(raw)
    except ValueError:
        return {"message": raw.strip()}
    return body if isinstance(body, dict) else {}


def _causes(body: dict[str, Any]) -> list[FieldCause]:
    details = body.get("details") or {}
    return [
        FieldCause(
            # The API server writes "<nil>" where no field applies (a CEL rule's note).
            field=str(c.get("field") or "").replace("<nil>", ""),
            message=str(c.get("message") or ""),
            reason=str(c.get("reason") or ""),
        )
        for c in details.get("causes") or []
        if isinstance(c, dict)
    ]


def from_api_exception(status: int, http_reason: str, raw_body: Any) -> ApiError:
    """The typed error for an error answer (``kubernetes.client.ApiException``'s parts)."""
    body = _status_body(raw_body)
    reason = str(body.get("reason") or http_reason or "")
    message = str(body.get("message") or http_reason or "")
    if status == 404:
        return NotFoundError(status, reason, message, body=body)
    if status == 403:
        return ForbiddenError(status, reason, message, body=body)
    if status == 409:
        kind = AlreadyExistsError if reason == "AlreadyExists" else ConflictError
        return kind(status, reason, message, body=body)
    if status == 422 or reason == "Invalid":
        return InvalidError(status, reason, message, body=body, causes=_causes(body))
    return ApiError(status, reason, message, body=body)


# The API server's strict field validation (fieldValidation=Strict): a create or update
# (400 BadRequest) or a merge patch (422, after the patched object) ends with
# ``strict decoding error: unknown field "spec.a", duplicate field "spec.b"``; a
# server-side apply names ``.spec.a: field not declared in schema``.
_STRICT = "strict decoding error: "
_STRICT_FIELD = re.compile(r'(?:unknown|duplicate) field "((?:[^"\\]|\\.)*)"')
_NOT_DECLARED = re.compile(r"(?:^|[\s(:])\.?([\w./\[\]-]+): field not declared in schema")


def strictly_refused_fields(message: str) -> list[str]:
    """The fields the API server's strict field validation named in ``message`` (an
    error answer's), as paths (``spec.runPolicy.cleanPodPolicyy``); empty if none."""
    fields: list[str] = []
    if _STRICT in message:
        tail = message.rsplit(_STRICT, 1)[1]
        fields += [json.loads(f'"{m}"') for m in _STRICT_FIELD.findall(tail)]
    fields += _NOT_DECLARED.findall(message)
    return list(dict.fromkeys(fields))
