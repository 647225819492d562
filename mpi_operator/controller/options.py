"""Settings of the controllers that come from the command line, shared by both kinds
(the Kubeflow sync reads ``cluster_domain``; ``gang`` serves both)."""

from __future__ import annotations

from dataclasses import dataclass

from mpi_operator.api.scheduling import GangScheduling


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    namespace: str | tuple[str, ...] | None = None
    """Watch only this namespace (or these); None watches all."""
    threadiness: int = 2
    cluster_domain: str = ""
    gang: GangScheduling | None = None
    queue_rate_limit: float = 10.0
    queue_burst: int = 100
    child_event_batch_seconds: float = 1.0
    """How long a child's change waits in the queue so that the changes of a job's
    other children join it in one sync (as the Job controller batches pod events)."""
