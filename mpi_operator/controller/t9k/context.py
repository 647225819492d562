"""What a T9k sync needs: the kit's context plus its caches and settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpi_operator.api.object_model import Obj
from mpi_operator.api.t9k import (
    API_VERSION,
    GROUP,
    KIND,
    OPERATOR_LABEL,
    OPERATOR_NAME,
    PLURAL,
    SCHEDULER_GROUP,
    SCHEDULER_VERSION,
    VERSION,
    MPIJob,
)
from mpi_operator.builders.t9k.pods import DEFAULT_INIT_IMAGE
from mpi_operator.client import Lister, Resource
from mpi_operator.controller.core.context import CoreContext
from mpi_operator.controller.core.job_sync import JobSync
from mpi_operator.controller.core.on_demand import OnDemandCache
from mpi_operator.controller.core.owner import Owner, reference

T9K_MPIJOBS = Resource(GROUP, VERSION, PLURAL, KIND)
T9K_POD_GROUPS = Resource(SCHEDULER_GROUP, SCHEDULER_VERSION, "podgroups", "PodGroup")
T9K_OPERATOR_SELECTOR = f"{OPERATOR_LABEL}={OPERATOR_NAME}"


@dataclass(frozen=True, slots=True)
class T9kOptions:
    """Settings of the T9k controller beyond the shared ControllerOptions."""

    init_image: str = DEFAULT_INIT_IMAGE
    """Image of the launcher's wait-for-workers init container (needs sh, nslookup, nc)."""
    workload_api: bool = False
    """``--gang-scheduling=workload-api``: a job that does not name the t9k scheduler gets
    a Workload API PodGroup, and its pods join it (set from ControllerOptions.gang)."""


@dataclass(slots=True)
class Listers:
    mpijobs: Lister
    pods: Lister
    services: Lister
    configmaps: Lister
    secrets: Lister
    pod_groups: OnDemandCache
    """The t9k scheduler's PodGroups, cached once a job needs one (its CRD is optional)."""
    gang_pod_groups: OnDemandCache | None = None
    """The Workload API's PodGroups of T9k jobs (with ``workload_api`` only), cached once a
    job needs one and the API is served."""


@dataclass(slots=True, kw_only=True)
class SyncContext(CoreContext):
    listers: Listers
    options: T9kOptions


#: One sync of a T9k MPIJob (:class:`~.sync.T9kJobSync`), as its children's helpers take
#: it: the context, the owner, the job and its key, whatever the sync decides.
T9kSync = JobSync[SyncContext, MPIJob, Any]


def job_reference(shared: Obj) -> Obj:
    return reference(shared, API_VERSION, KIND)


def owner_of(shared: Obj) -> Owner:
    return Owner.of(shared, API_VERSION, KIND, {OPERATOR_LABEL: OPERATOR_NAME})
