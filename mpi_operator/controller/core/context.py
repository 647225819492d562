"""What a sync of either kind needs: the API client, the recorder, the clock, the SSH
key generator, the per-job state and whether pod collections may be deleted. Each
kind's context adds its listers and settings."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from mpi_operator.api.object_model import Obj
from mpi_operator.builders.ssh import SSHKeyPair, generate_ssh_key_pair
from mpi_operator.client import Clock, EventRecorder, KubeClient, Lister, split_key
from mpi_operator.controller.core.state import JobState

#: Seconds after a refused delete of the pods collection before it is tried again;
#: meanwhile pods are deleted one by one (:mod:`.pods`).
COLLECTION_RETRY_S = 600.0


@dataclass(slots=True)
class CollectionDeletes:
    """Whether the API server refused a delete of the pods collection lately (no RBAC
    right). One per controller: each kind learns it on its own."""

    refused_at: float | None = None
    """Monotonic seconds of the last refusal."""

    def allowed(self, now: float) -> bool:
        return self.refused_at is None or now - self.refused_at >= COLLECTION_RETRY_S


@dataclass(slots=True, kw_only=True)
class CoreContext:
    client: KubeClient
    recorder: EventRecorder
    clock: Clock
    state: JobState
    """What the controller keeps per MPIJob between syncs (expectations, own writes,
    progress spacing, failing syncs)."""
    requeue: Callable[[str], None]
    """Gives a key another turn, behind the keys that have not had theirs (a sync that
    left pods to create or delete for later)."""
    requeue_after: Callable[[str, float], None]
    """Syncs the key again after that many seconds (a deadline, a deferred write)."""
    continuing: Callable[[str], bool]
    """Whether the key's turn is a continuation of its last."""
    keygen: Callable[[], SSHKeyPair] = field(default=generate_ssh_key_pair)
    collection_deletes: CollectionDeletes = field(default_factory=CollectionDeletes)
    """Whether the API server refused a delete of the pods collection lately."""

    def in_flight(self, key: str, names: Iterable[str]) -> set[str]:
        """The pods of ``key`` created by an earlier sync that the cache (``names``)
        does not show yet."""
        return self.state.creations.unobserved(key, names)


C = TypeVar("C", bound=CoreContext)


class Syncer(Generic[C]):
    """A kind's sync handler over its context; its ``sync(key)`` raises to ask for a
    retry with backoff and returns when the key is done."""

    def __init__(self, ctx: C) -> None:
        self.ctx = ctx


def cached(lister: Lister, key: str) -> Obj | None:
    """The object of ``key`` ("namespace/name") in the cache."""
    return lister.get(*split_key(key))
