"""What a sync of either kind needs: the API client, the recorder, the clock, the SSH
key generator and the pod creation expectations. Each kind's context adds its
listers and settings."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from mpi_operator.builders.secret import SSHKeyPair, generate_ssh_key_pair
from mpi_operator.client import Clock, EventRecorder, KubeClient
from mpi_operator.controller.core.expectations import CreationExpectations


@dataclass(slots=True, kw_only=True)
class CoreContext:
    client: KubeClient
    recorder: EventRecorder
    clock: Clock
    expectations: CreationExpectations
    """Pods created but not yet seen by the informer (the controller's, fed by its
    pod informer)."""
    keygen: Callable[[], SSHKeyPair] = field(default=generate_ssh_key_pair)
    requeue: Callable[[str], None] | None = None
    """Adds a key back at the end of the queue (a sync that left pods for later)."""

    def in_flight(self, key: str, names: Iterable[str]) -> set[str]:
        """The pods of ``key`` created by an earlier sync that the cache (``names``)
        does not show yet."""
        return self.expectations.unobserved(key, names)
