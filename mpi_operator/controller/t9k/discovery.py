"""Whether this process serves T9k MPIJobs.

Both are asked once at start-up. Installing the CRD alone must not crash-loop an
operator whose RBAC predates it, so a 403 leaves the Kubeflow controller alone
at work, with a warning saying what is missing.
"""

from __future__ import annotations

import structlog
from prometheus_client import CollectorRegistry

from mpi_operator.client import (
    ApiError,
    EventRecorder,
    KubeClient,
)
from mpi_operator.client.informer import namespace_scopes
from mpi_operator.controller.options import ControllerOptions
from mpi_operator.controller.t9k.context import (
    T9K_MPIJOBS,
    T9kOptions,
)
from mpi_operator.controller.t9k.controller import T9kMPIJobController, crd_installed

log = structlog.get_logger(__name__)


async def may_list(client: KubeClient, options: ControllerOptions) -> bool:
    """Whether RBAC lets us list T9k MPIJobs in every watched namespace."""
    try:
        for namespace in namespace_scopes(options.namespace):
            await client.list(T9K_MPIJOBS, namespace, limit=1, undecodable_items=True)
    except ApiError as err:
        if err.status != 403:
            raise
        log.warning(
            "T9k MPIJob CRD installed but RBAC forbids listing its MPIJobs; not serving them",
            error=err.message,
        )
        return False
    return True


async def t9k_controller_if_served(
    client: KubeClient,
    options: ControllerOptions,
    *,
    recorder: EventRecorder | None = None,
    registry: CollectorRegistry | None = None,
    t9k_options: T9kOptions | None = None,
) -> T9kMPIJobController | None:
    """The T9k controller (sharing ``recorder``) when its CRD is served and RBAC allows;
    None, with the reason logged, otherwise. Other API errors of the RBAC probe raise."""
    try:
        installed = await crd_installed(client)
    except ApiError as err:
        log.warning(
            "cannot tell whether the T9k MPIJob CRD is installed; not serving it", error=str(err)
        )
        return None
    if not installed:
        log.info("T9k MPIJob CRD not installed; serving kubeflow.org MPIJobs only")
        return None
    if not await may_list(client, options):
        return None
    log.info("serving T9k MPIJobs (batch.tensorstack.dev/v1beta1) too")
    return T9kMPIJobController(
        client, options, recorder=recorder, registry=registry, t9k_options=t9k_options
    )
