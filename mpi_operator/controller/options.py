"""Settings of the controller that come from the command line."""

from __future__ import annotations

from dataclasses import dataclass

from mpi_operator.builders.podgroup import GangScheduling


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    namespace: str | None = None
    """Watch only this namespace; None watches all."""
    threadiness: int = 2
    cluster_domain: str = ""
    gang: GangScheduling | None = None
    queue_rate_limit: float = 10.0
    queue_burst: int = 100
