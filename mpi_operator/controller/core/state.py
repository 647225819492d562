"""What the controller keeps per MPIJob between syncs, and the one way to forget it.

:class:`JobState` holds, per MPIJob key: the pods created and deleted but not yet seen
by the cache (expectations), the objects our last writes returned (own writes), the
spacing of progress-only writes, and the record of failing syncs. The controller calls
:meth:`JobState.forget` once the MPIJob is gone, and nothing else forgets a key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.client import Clock
from mpi_operator.controller.core.failures import Reporter, SyncFailures

# -------------------- Creation and deletion expectations --------------------
#
# Pods we created that the informer has not shown us yet.
#
# Without this, a sync that runs before the cache caught up with the previous
# sync's creations sees those pods as missing and creates them again (each
# answered AlreadyExists). client-go's Job controller keeps
# ControllerExpectations for the same reason; we keep the names, not counts.
# A name is expected before its create is sent and forgotten once the pod
# informer reports the pod added or deleted (:meth:`observed`, called by its
# event handlers as client-go's CreationObserved/DeletionObserved lower the
# counts), once a sync's cache shows it, or after ``ttl`` seconds. The entry of
# a deleted MPIJob is dropped (:meth:`clear`, client-go's DeleteExpectations).

DEFAULT_TTL = 300.0  # as client-go's ExpectationsTimeout


class CreationExpectations:
    def __init__(self, clock: Clock, ttl: float = DEFAULT_TTL) -> None:
        self._clock = clock
        self._ttl = ttl
        self._pending: dict[str, dict[str, float]] = {}

    def expect(self, key: str, names: Iterable[str]) -> None:
        now = self._clock.monotonic()
        self._pending.setdefault(key, {}).update(dict.fromkeys(names, now))

    def observed(self, key: str, name: str) -> None:
        """The informer showed pod ``name`` of ``key`` (added or deleted), or its
        create failed: it is in flight no more."""
        pending = self._pending.get(key)
        if pending is not None and pending.pop(name, None) is not None and not pending:
            del self._pending[key]

    def unobserved(self, key: str, cached: Iterable[str]) -> set[str]:
        """Names created for ``key`` that the cache still lacks; forgets the rest."""
        pending = self._pending.get(key)
        if not pending:
            return set()
        now = self._clock.monotonic()
        seen = set(cached)
        for name, since in list(pending.items()):
            if name in seen or now - since > self._ttl:
                del pending[name]
        if not pending:
            del self._pending[key]
            return set()
        return set(pending)

    def clear(self, key: str) -> None:
        self._pending.pop(key, None)

    def keys(self) -> list[str]:
        """The jobs with pods in flight."""
        return list(self._pending)


class DeletionExpectations:
    """Pods (by uid) whose delete a sync sent, kept until ``ttl`` seconds after the
    job's latest such delete.

    A sync that runs before the pod informer shows those deletes would send them again;
    the Job controller's UIDTrackingControllerExpectations keep the uids for the same
    reason. A pod made anew under the same name has a new uid, so it is deleted when it
    should be. Deviation: entries age out instead of being lowered by delete events
    (a sync skips only the uids it is told about, so a late one costs nothing); every
    ``expect`` drops the aged jobs."""

    def __init__(self, ttl: float = DEFAULT_TTL) -> None:
        self._ttl = ttl
        self._sent: dict[str, tuple[float, frozenset[str]]] = {}

    def expect(self, key: str, uids: Iterable[str], now: float) -> None:
        for other, (since, _) in list(self._sent.items()):
            if now - since > self._ttl:
                del self._sent[other]
        _, earlier = self._sent.get(key, (now, frozenset()))
        self._sent[key] = (now, earlier.union(uids))

    def pending(self, key: str, now: float) -> frozenset[str]:
        """The uids of ``key``'s pods whose delete was sent, within ``ttl`` of the
        latest."""
        since, uids = self._sent.get(key, (now, frozenset()))
        if now - since > self._ttl:
            del self._sent[key]
            return frozenset()
        return uids

    def clear(self, key: str) -> None:
        self._sent.pop(key, None)


# -------------------- Our own writes --------------------
#
# What this controller wrote for an MPIJob, until its cache has seen the write.
#
# A key whose children changed while its sync ran is taken again as soon as that sync
# is done, often before the watch event of the sync's own write has reached the
# informer. A sync on that stale object computes from the old one and writes it with
# the old resourceVersion: the API server answers 409 Conflict, and the key is retried
# with backoff. It happened once in every 2,000-worker fan-out to the MPIJob's status,
# and now and then to the ConfigMap's ``discover_hosts.sh``, rewritten as workers start.
#
# Ours, not client-go's (whose controllers take the 409 and retry): the object the
# write returned is kept, with the resourceVersions it supersedes: the one the write
# replaced and, when that was a kept object itself, the ones that object superseded
# (the watch may lag more than one write). While the cache shows one of those, a sync
# reads the returned object instead; once it shows any other, the cache is as new or
# newer and the kept object goes.

#: What was written: the MPIJob's status, or its ConfigMap (hostfile, discover_hosts.sh).
STATUS = "status"
CONFIG_MAP = "configmap"


def _resource_version(obj: Obj) -> str:
    return str(metadata_of(obj).get("resourceVersion") or "")


class OwnWrites:
    """Per MPIJob key and object written (:data:`STATUS`, :data:`CONFIG_MAP`), the
    object our last write returned (one per controller, dropped with the MPIJob)."""

    def __init__(self) -> None:
        # key -> what -> (the resourceVersions superseded, the object the write returned)
        self._written: dict[str, dict[str, tuple[frozenset[str], Obj]]] = {}

    def wrote(self, key: str, replaced: Obj, returned: Obj, what: str = STATUS) -> None:
        """A write for ``key`` replaced ``replaced`` and answered ``returned``."""
        before, after = _resource_version(replaced), _resource_version(returned)
        if not before or not after or after == before:
            return  # nothing to tell the two apart by
        meta = returned.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)  # as the informer keeps it
        kept = self._written.setdefault(key, {})
        superseded = frozenset((before,))
        if (last := kept.get(what)) is not None and _resource_version(last[1]) == before:
            superseded |= last[0]  # written over our own last answer: the cache lags more
        kept[what] = (superseded, returned)

    def latest(self, key: str, cached: Obj | None, what: str = STATUS) -> Obj | None:
        """The newest known object: ``cached``, or the object our last write of
        ``what`` for ``key`` returned while ``cached`` is one that write superseded."""
        kept = self._written.get(key, {})
        entry = kept.get(what)
        if entry is None:
            return cached
        superseded, returned = entry
        if cached is not None and _resource_version(cached) in superseded:
            return returned
        del kept[what]
        if not kept:
            del self._written[key]
        return cached

    def clear(self, key: str) -> None:
        self._written.pop(key, None)

    def __len__(self) -> int:
        return sum(len(kept) for kept in self._written.values())


# -------------------- Progress writes spaced out --------------------
#
# Progress-only writes of a fanning-out job, spaced out.
#
# While thousands of workers start, each sync sees a few more Running: the hostfile's
# ``discover_hosts.sh`` gains lines and ``status.replicaStatuses`` counts go up. Writing
# each of those (a sync per second) makes the writes per job grow with the worker count.
# A write that only reports such progress waits here, per job and kind: the first a
# minute after the first progress seen, the next a minute after that, then every two
# minutes, so a fan-out of under a minute costs none of them and a long one one every
# minute or two, where it used to cost one a second. Anything else is written at once
# and starts the spacing over: a condition that changes (Running, Succeeded, Failed,
# Restarting ...), an event, the complete set of workers, a host that goes away. A
# deferred write is not lost: the sync asks to be run again when the wait is over.
#
# A job of fewer than ``SPACED_FROM_WORKERS`` workers waits ``SMALL_JOB_GAP`` for each
# progress write, without doubling: its workers start within a second or two, so the
# Running write (which goes at once) nearly always carries that progress, and the job
# costs one status write and one ``discover_hosts.sh`` write fewer, while a small job
# whose workers never all start still shows each change within seconds. Ours only; the
# reference writes on every sync, and its 10/s event bucket spaces the syncs instead.
#
# The same short wait serves a status that passes by itself (``TRANSIENT``): a
# launcher pod that ended shows as one active launcher fewer for the moment before
# the Job controller marks its Job finished, and that finished Job's status write
# follows at once, so the count alone is not written unless the moment lasts.

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


class JobState:
    """Everything kept per MPIJob between its syncs (one per controller)."""

    def __init__(self, clock: Clock, report: Reporter) -> None:
        self.creations = CreationExpectations(clock)
        self.deletions = DeletionExpectations()
        self.own_writes = OwnWrites()
        self.progress = ProgressWrites(clock)
        self.failures = SyncFailures(report, clock)
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
        for forget in self._also_forget:
            forget(key)
