"""What a T9k sync needs: client, caches, recorder, clock and settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

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
)
from mpi_operator.builders.secret import SSHKeyPair, generate_ssh_key_pair
from mpi_operator.builders.t9k.pods import DEFAULT_INIT_IMAGE
from mpi_operator.client import Clock, EventRecorder, KubeClient, Lister, Resource
from mpi_operator.controller.expectations import CreationExpectations

T9K_MPIJOBS = Resource(GROUP, VERSION, PLURAL, KIND)
T9K_POD_GROUPS = Resource(SCHEDULER_GROUP, SCHEDULER_VERSION, "podgroups", "PodGroup")
T9K_OPERATOR_SELECTOR = f"{OPERATOR_LABEL}={OPERATOR_NAME}"

ERR_RESOURCE_EXISTS = "ErrResourceExists"
MESSAGE_RESOURCE_EXISTS = (
    'Resource "{name}" of Kind "{kind}" already exists and is not managed by MPIJob'
)


class SyncError(Exception):
    """The sync could not finish; the key is retried with backoff."""


@dataclass(frozen=True, slots=True)
class T9kOptions:
    """Settings of the T9k controller beyond the shared ControllerOptions."""

    init_image: str = DEFAULT_INIT_IMAGE
    """Image of the launcher's wait-for-workers init container (needs sh, nslookup, nc)."""


@dataclass(slots=True)
class Listers:
    mpijobs: Lister
    pods: Lister
    services: Lister
    configmaps: Lister
    secrets: Lister


@dataclass(slots=True)
class SyncContext:
    client: KubeClient
    listers: Listers
    recorder: EventRecorder
    clock: Clock
    options: T9kOptions
    keygen: Callable[[], SSHKeyPair] = field(default=generate_ssh_key_pair)
    expectations: CreationExpectations | None = None
    requeue: Callable[[str], None] | None = None
    """Adds a key back at the end of the queue (a sync that left pods for later)."""

    def __post_init__(self) -> None:
        if self.expectations is None:
            self.expectations = CreationExpectations(self.clock)


def job_reference(shared: Obj) -> Obj:
    return {**shared, "apiVersion": API_VERSION, "kind": KIND}


def has_operator_label(obj: Obj) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(OPERATOR_LABEL) == OPERATOR_NAME)
