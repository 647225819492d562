"""The kubernetes client's failures turned into the SDK's typed errors: an error answer
(``ApiException``) by its kind, the refusal of the API server's strict field
validation (an unknown field in a pod template) as
:class:`~mpi_operator.sdk.errors.InvalidSpecError` naming each field, a failed
connection (urllib3's errors, socket errors) as
:class:`~mpi_operator.sdk.errors.SDKConnectionError`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ConnectTimeoutError, MaxRetryError, NewConnectionError
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from .errors import (
    InvalidSpecError,
    SDKConnectionError,
    SDKTimeoutError,
    from_api_exception,
    strictly_refused_fields,
)


def _cause(error: BaseException) -> str:
    if isinstance(error, MaxRetryError) and error.reason is not None:
        return f"{error.reason}"
    return str(error) or type(error).__name__


def _timed_out(error: BaseException) -> bool:
    """Whether the request timed out (urllib3 counts a refused connection as a
    ``TimeoutError`` too: it is not one here)."""
    if isinstance(error, MaxRetryError) and error.reason is not None:
        error = error.reason
    if isinstance(error, NewConnectionError):
        return False
    return isinstance(error, Urllib3Timeout | ConnectTimeoutError | TimeoutError)


@contextmanager
def translated(host: str = "") -> Iterator[None]:
    """Raises the SDK's error for whatever the kubernetes client raises inside."""
    where = f" at {host}" if host else ""
    try:
        yield
    except ApiException as e:
        if not e.status:  # the client's own failure, before any answer
            raise SDKConnectionError(f"API server{where}: {e.reason or e}") from e
        error = from_api_exception(int(e.status), str(e.reason or ""), e.body)
        fields = strictly_refused_fields(error.message)
        if fields:
            raise InvalidSpecError(
                f"the API server{where} refused unknown or duplicate field(s) "
                f"(strict field validation): {', '.join(fields)}",
                fields,
            ) from error
        raise error from e
    except (Urllib3Error, OSError) as e:
        if _timed_out(e):
            raise SDKTimeoutError(f"the API server{where} timed out: {_cause(e)}") from e
        raise SDKConnectionError(f"cannot reach the API server{where}: {_cause(e)}") from e
