"""A child kind the API server does not serve: the message names the CRD to install.

Without it the log says ``404 Not Found: 404 page not found``, which names nothing.
The sync fails and is retried (at most :data:`RETRY_CAP` apart, so the job goes on
soon after the CRD is installed), and the failure becomes a ``SyncFailed`` Warning
event on the MPIJob (:mod:`~mpi_operator.controller.failures`). No condition is set:
the job can proceed once the CRD exists.
"""

from __future__ import annotations

from mpi_operator.client import Resource
from mpi_operator.client.errors import ApiError, RetrySoonError, is_not_served

#: Longest wait before retrying a job whose child's CRD was missing.
RETRY_CAP = 30.0


class MissingCRDError(RetrySoonError):
    """The CRD of a child the job needs is not installed."""

    retry_cap = RETRY_CAP


def crd_name(resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}"


def missing_crd(resource: Resource, needed_for: str, err: ApiError) -> MissingCRDError:
    return MissingCRDError(
        f'the CRD "{crd_name(resource)}" ({resource.api_version} {resource.kind}) is not '
        f"installed; install it to use {needed_for} (the API server answered: "
        f"{err.status} {err.message.strip()})"
    )


def raise_if_not_served(err: ApiError, resource: Resource, needed_for: str) -> None:
    """Raises :class:`MissingCRDError` when ``err`` says ``resource`` is not served."""
    if is_not_served(err):
        raise missing_crd(resource, needed_for, err) from None
