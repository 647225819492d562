"""Progress-only status and ConfigMap writes of a fanning-out job, spaced out.

While thousands of workers start, each sync sees a few more Running: the hostfile's
``discover_hosts.sh`` gains lines and ``status.replicaStatuses`` counts go up. Writing
each of those (a sync per second) makes the writes per job grow with the worker count.
A write that only reports such progress waits here, per job and kind: the first a
minute after the first progress seen, the next a minute after that, then every two
minutes, so a fan-out of under a minute costs none of them and a long one one every
minute or two, where it used to cost one a second. Anything else is written at once
and starts the spacing over: a condition that changes (Running, Succeeded, Failed,
Restarting ...), an event, the complete set of workers, a host that goes away. A
deferred write is not lost: the sync asks to be run again when the wait is over.

A job of fewer than ``SPACED_FROM_WORKERS`` workers waits ``SMALL_JOB_GAP`` for each
progress write, without doubling: its workers start within a second or two, so the
Running write (which goes at once) nearly always carries that progress, and the job
costs one status write and one ``discover_hosts.sh`` write fewer, while a small job
whose workers never all start still shows each change within seconds. Ours only; the
reference writes on every sync, and its 10/s event bucket spaces the syncs instead.

The same short wait serves a status that passes by itself (``TRANSIENT``): a
launcher pod that ended shows as one active launcher fewer for the moment before
the Job controller marks its Job finished, and that finished Job's status write
follows at once, so the count alone is not written unless the moment lasts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mpi_operator.client import Clock

#: Jobs with fewer workers wait ``SMALL_JOB_GAP`` for each progress write.
SPACED_FROM_WORKERS = 100
FIRST_GAP = 60.0
SMALL_JOB_GAP = 5.0
MAX_GAP = 120.0
#: ``workers`` for a state that passes by itself within seconds whatever the job's
#: size (a launcher whose pod ended before its Job is marked finished): it waits
#: ``SMALL_JOB_GAP``.
TRANSIENT = 0


@dataclass
class _Schedule:
    next_at: float
    gap: float
    first_gap: float
    #: Doubles after each write (big jobs) or stays ``first_gap`` (small ones).
    doubling: bool


class ProgressWrites:
    def __init__(
        self,
        clock: Clock,
        first_gap: float = FIRST_GAP,
        max_gap: float = MAX_GAP,
        small_job_gap: float = SMALL_JOB_GAP,
    ):
        self._clock = clock
        self._first_gap = first_gap
        self._small_job_gap = min(small_job_gap, first_gap)
        self._max_gap = max_gap
        self._schedules: dict[tuple[str, str], _Schedule] = {}

    def _new(self, at: float, workers: int | None) -> _Schedule:
        if workers is not None and workers < SPACED_FROM_WORKERS:
            return _Schedule(at + self._small_job_gap, 0.0, self._small_job_gap, False)
        return _Schedule(at + self._first_gap, 0.0, self._first_gap, True)

    def due(self, kind: str, key: str, workers: int | None = None) -> float:
        """Seconds until a progress-only write of ``kind`` for ``key`` may go (0.0: now);
        ``workers``: the job's worker count (None: a big job)."""
        now = self._clock.monotonic()
        schedule = self._schedules.get((kind, key))
        if schedule is None:
            # The first progress seen starts the clock: it is written ``first_gap`` later.
            schedule = self._schedules[(kind, key)] = self._new(now, workers)
        return max(schedule.next_at - now, 0.0)

    def wrote(self, kind: str, key: str, workers: int | None = None) -> None:
        """A progress-only write went: the next waits twice as long as the last did (a
        small job's next waits as long)."""
        now = self._clock.monotonic()
        schedule = self._schedules.get((kind, key)) or self._new(now, workers)
        gap = schedule.first_gap
        if schedule.doubling and schedule.gap:
            gap = min(schedule.gap * 2, self._max_gap)
        self._schedules[(kind, key)] = _Schedule(
            now + gap, gap, schedule.first_gap, schedule.doubling
        )

    def defer(
        self,
        kind: str,
        key: str,
        requeue_after: Callable[[str, float], None],
        workers: int | None = None,
    ) -> bool:
        """True when the write must wait: the key is queued again for when it may go."""
        wait = self.due(kind, key, workers)
        if wait <= 0.0:
            return False
        requeue_after(key, wait)
        return True

    def reset(self, key: str) -> None:
        """A write that is not only progress went: the spacing starts over."""
        for k in [k for k in self._schedules if k[1] == key]:
            del self._schedules[k]

    clear = reset
