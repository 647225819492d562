"""Pods created or deleted that the pod informer has not shown yet (expectations).

Without this, a sync that runs before the cache caught up with the previous
sync's creations sees those pods as missing and creates them again (each
answered AlreadyExists). client-go's Job controller keeps
ControllerExpectations for the same reason; we keep the names, not counts.
A name is expected before its create is sent and forgotten once the pod
informer reports the pod added or deleted (:meth:`observed`, called by its
event handlers as client-go's CreationObserved/DeletionObserved lower the
counts), once a sync's cache shows it, or after ``ttl`` seconds. The entry of
a deleted MPIJob is dropped (:meth:`clear`, client-go's DeleteExpectations).
"""

from __future__ import annotations

from collections.abc import Iterable

from mpi_operator.client import Clock

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
