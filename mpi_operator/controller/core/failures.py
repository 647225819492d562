"""Sync failures that persist become visible on the MPIJob (ours; the reference only
logs): the per-key record of consecutive failed syncs, owned by the job's state
(:class:`~mpi_operator.controller.core.state.JobState`) and fed by the loop
(:mod:`~mpi_operator.controller.runner`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import structlog

from mpi_operator.client.clock import Clock
from mpi_operator.client.errors import is_conflict, is_server_unavailable

# Sync failures that persist become visible on the MPIJob (ours; the reference only logs).
#
# A failed sync is retried with backoff (:mod:`~mpi_operator.controller.runner`). One
# failure is routine: a conflict, a cache a moment behind. The same failure
# :data:`REPEATS` times in a row, or failures lasting :data:`PERSISTENT_AFTER` seconds,
# are not: the MPIJob then gets a Warning event :data:`SYNC_FAILED` carrying the error
# (the API server's status and message), again when the message changes and at most
# every :data:`REPORT_EVERY` seconds while it lasts. The event correlator counts the
# repeats on one Event and its spam filter bounds them. A key's record is forgotten
# when a sync of it succeeds and when its MPIJob is deleted.
#
# Conflicts and "not now" answers (no answer, 429, 502-504) clear on a retry as a rule,
# so only their duration counts, not their repeats.


log = structlog.get_logger(__name__)

SYNC_FAILED = "SyncFailed"
#: The same error this many times in a row is persistent.
REPEATS = 3
#: Failures (any) for this long are persistent.
PERSISTENT_AFTER = 30.0
#: Least time between two events of one key with the same message: the event spam
#: filter's refill period, so that a lasting failure never empties the job's bucket.
REPORT_EVERY = 300.0

#: Puts the event on the MPIJob of ``key``; False when there is no such MPIJob.
Reporter = Callable[[str, str], bool]


@dataclass(slots=True)
class Failure:
    first_seen: float
    message: str
    repeats: int = 1
    reported_at: float | None = None
    reported_message: str = ""


def describe(err: BaseException) -> str:
    """The error as users see it: the API's status and message, or the exception."""
    return str(err) or repr(err)


class SyncFailures:
    """Per-key record of a key's consecutive failed syncs."""

    def __init__(self, report: Reporter, clock: Clock) -> None:
        self._report = report
        self._clock = clock
        self._failures: dict[str, Failure] = {}

    def __len__(self) -> int:
        return len(self._failures)

    def get(self, key: str) -> Failure | None:
        return self._failures.get(key)

    def clear(self, key: str) -> None:
        """The key's sync succeeded, or its MPIJob is gone: its record ends."""
        self._failures.pop(key, None)

    def failed(self, key: str, err: BaseException) -> None:
        """Records a failed sync of ``key``; reports it once it is persistent."""
        now = self._clock.monotonic()
        message = describe(err)
        failure = self._failures.get(key)
        if failure is None:
            failure = self._failures[key] = Failure(first_seen=now, message=message)
        elif failure.message == message:
            failure.repeats += 1
        else:
            failure.message, failure.repeats = message, 1
        transient = is_conflict(err) or is_server_unavailable(err)
        persistent = (not transient and failure.repeats >= REPEATS) or (
            now - failure.first_seen >= PERSISTENT_AFTER
        )
        if not persistent or not self._due(failure, now):
            return
        if not self._report(key, message):
            self.clear(key)  # the MPIJob is gone
            return
        if failure.reported_at is None:
            log.warning("sync keeps failing; reported on the MPIJob", mpijob=key, error=message)
        failure.reported_at, failure.reported_message = now, message

    @staticmethod
    def _due(failure: Failure, now: float) -> bool:
        return (
            failure.reported_at is None
            or failure.reported_message != failure.message
            or now - failure.reported_at >= REPORT_EVERY
        )
