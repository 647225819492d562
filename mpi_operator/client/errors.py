"""Errors from the API server and the network, and predicates over them.

:class:`ApiError` carries the HTTP status and the decoded ``metav1.Status``
(reason, message); the ``is_*`` helpers mirror apimachinery's
``errors.IsNotFound`` and friends.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

# Exceptions the reflector and other loops treat as transient network trouble.
NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    aiohttp.ClientError,
    OSError,
    asyncio.TimeoutError,
)


class ApiError(Exception):
    """A non-2xx answer from the API server (``status`` 0: no answer at all)."""

    def __init__(self, status: int, body: Any = None, reason: str = "") -> None:
        self.status = status
        self.body: dict[str, Any] = body if isinstance(body, dict) else {}
        self.reason = str(self.body.get("reason") or reason)
        self.message = str(self.body.get("message") or body or reason)
        super().__init__(f"{status} {self.reason}: {self.message}")


class RetrySoonError(Exception):
    """A failure that goes away by itself once something outside the operator changes
    (a CRD installed): the key is retried at most :attr:`retry_cap` seconds apart."""

    retry_cap: float = 30.0


# Anything a request can fail with: an answer from the server or no answer.
REQUEST_ERRORS: tuple[type[BaseException], ...] = (ApiError, *NETWORK_ERRORS)


def is_server_unavailable(err: BaseException) -> bool:
    """No answer, or an answer that says "not now" (throttled, starting, overloaded,
    a gateway in between): the request itself may well succeed on a retry."""
    if isinstance(err, ApiError):
        return err.status in (0, 429, 502, 503, 504)
    return isinstance(err, NETWORK_ERRORS)


def is_not_found(err: BaseException) -> bool:
    return isinstance(err, ApiError) and err.status == 404


#: The message of the 404 for a resource the API server does not serve in a group it
#: serves (a built-in group's version not enabled, scheduling.k8s.io/v1alpha2 say).
NOT_SERVED_MESSAGE = "the server could not find the requested resource"


def is_not_served(err: BaseException) -> bool:
    """A 404 that is not about an object: the API server does not serve the resource at
    all. Without a Status body ("404 page not found") when no handler knows the group
    (a CRD not installed); with a NotFound Status that names no object when the group is
    served but not this version or resource. A missing object is a 404 too, with a
    Status that names it (``details.name``)."""
    if not isinstance(err, ApiError) or err.status != 404:
        return False
    if not err.body:
        return True
    details = err.body.get("details") or {}
    return not details.get("name") and err.message.strip() == NOT_SERVED_MESSAGE


def is_conflict(err: BaseException) -> bool:
    return isinstance(err, ApiError) and err.status == 409 and err.reason != "AlreadyExists"


def is_already_exists(err: BaseException) -> bool:
    return isinstance(err, ApiError) and err.status == 409 and err.reason == "AlreadyExists"


def is_gone(err: BaseException) -> bool:
    """410 / 'Expired': the resourceVersion we asked for was compacted away."""
    if not isinstance(err, ApiError):
        return False
    return (
        err.status == 410
        or err.reason in ("Expired", "Gone")
        or "too old resource version" in err.message
    )
