"""A child kind the API server does not serve: the message names what to install or
enable.

Without it the log says ``404 Not Found: 404 page not found``, which names nothing. A
kind of a CRD (Volcano's, scheduler-plugins', the t9k scheduler's PodGroup) is "not
installed"; a kind of a built-in API group (the Workload API's PodGroup,
scheduling.k8s.io/v1alpha2) has no CRD to install: it is "not served", and the message
says which feature gates and ``--runtime-config`` turn it on.
The sync fails and is retried (at most :data:`RETRY_CAP` apart, so the job goes on
soon after the CRD is installed), and the failure becomes a ``SyncFailed`` Warning
event on the MPIJob (:mod:`~mpi_operator.controller.runner`). No condition is set:
the job can proceed once the CRD exists.
"""

from __future__ import annotations

from mpi_operator.client import Resource
from mpi_operator.client.errors import ApiError, RetrySoonError, is_not_served

#: What a gang scheduler's PodGroup is needed for, as the message of a missing one says.
GANG_SCHEDULING_FLAG = "--gang-scheduling"

#: Longest wait before retrying a job whose child's CRD was missing.
RETRY_CAP = 30.0


class MissingCRDError(RetrySoonError):
    """The API of a child the job needs is not served: its CRD is not installed, or its
    built-in API group is not enabled."""

    retry_cap = RETRY_CAP


#: What turns on a built-in API group that clusters may lack, by ``group/version``.
BUILT_IN_ENABLEMENT = {
    "scheduling.k8s.io/v1alpha2": (
        "the feature gates GenericWorkload=true,GangScheduling=true (kube-apiserver, "
        "kube-scheduler; GenericWorkload on kube-controller-manager too) and "
        "--runtime-config=scheduling.k8s.io/v1alpha2=true (kube-apiserver)"
    ),
}


def crd_name(resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}"


def is_built_in(resource: Resource) -> bool:
    """Whether Kubernetes itself serves the group (``*.k8s.io`` is reserved for it; the
    ``*.x-k8s.io`` groups of SIG projects are CRDs)."""
    group = resource.group
    return (
        not group
        or group == "k8s.io"
        or (group.endswith(".k8s.io") and not group.endswith(".x-k8s.io"))
    )


def not_served(resource: Resource, needed_for: str) -> str:
    """Why the API server does not serve ``resource``, and what to do about it."""
    if is_built_in(resource):
        how = BUILT_IN_ENABLEMENT.get(
            resource.api_version, f"--runtime-config={resource.api_version}=true"
        )
        return (
            f"the API group {resource.api_version} ({resource.kind}) is not served; "
            f"enable it with {how} to use {needed_for}"
        )
    return (
        f'the CRD "{crd_name(resource)}" ({resource.api_version} {resource.kind}) is not '
        f"installed; install it to use {needed_for}"
    )


def missing_crd(resource: Resource, needed_for: str, err: ApiError) -> MissingCRDError:
    return MissingCRDError(
        f"{not_served(resource, needed_for)} (the API server answered: "
        f"{err.status} {err.message.strip()})"
    )


def raise_if_not_served(err: ApiError, resource: Resource, needed_for: str) -> None:
    """Raises :class:`MissingCRDError` when ``err`` says ``resource`` is not served."""
    if is_not_served(err):
        raise missing_crd(resource, needed_for, err) from None
