"""What the controller keeps per MPIJob between syncs, and the one way to forget it.

:class:`JobState` holds, per MPIJob key: the pods created and deleted but not yet seen
by the cache (expectations), the objects our last writes returned (own writes), the
spacing of progress-only writes, the record of failing syncs and the field errors of
the object last checked. The controller calls
:meth:`JobState.forget` once the MPIJob is gone, and nothing else forgets a key.
"""

from __future__ import annotations

from collections.abc import Callable

from mpi_operator.client import Clock
from mpi_operator.controller.core.expectations import CreationExpectations, DeletionExpectations
from mpi_operator.controller.core.failures import Reporter, SyncFailures
from mpi_operator.controller.core.own_writes import OwnWrites
from mpi_operator.controller.core.spacing import ProgressWrites
from mpi_operator.controller.core.spec_checks import SpecChecks


class JobState:
    """Everything kept per MPIJob between its syncs (one per controller)."""

    def __init__(self, clock: Clock, report: Reporter) -> None:
        self.creations = CreationExpectations(clock)
        self.deletions = DeletionExpectations()
        self.own_writes = OwnWrites()
        self.progress = ProgressWrites(clock)
        self.failures = SyncFailures(report, clock)
        self.checks = SpecChecks()
        self._also_forget: list[Callable[[str], None]] = []

    def also_forget(self, forget: Callable[[str], None]) -> None:
        """Adds what a kind keeps outside this state (its per-job metric series)."""
        self._also_forget.append(forget)

    def forget(self, key: str) -> None:
        """The MPIJob ``key`` is gone: everything kept for it goes."""
        self.creations.clear(key)
        self.deletions.clear(key)
        self.own_writes.clear(key)
        self.progress.clear(key)
        self.failures.clear(key)
        self.checks.clear(key)
        for forget in self._also_forget:
            forget(key)
