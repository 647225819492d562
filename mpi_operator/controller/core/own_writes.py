"""The MPIJobs whose status this controller wrote, until its cache has seen the write.

A key whose children changed while its sync ran is taken again as soon as that sync
is done, often before the watch event of the sync's own status write has reached the
informer. A sync on that stale object computes its status from the old one and writes
it with the old resourceVersion: the API server answers 409 Conflict, and the key is
retried with backoff. (It happened once in every 2,000-worker fan-out.)

Ours, not client-go's (whose controllers take the 409 and retry): the object the
status write returned is kept, with the resourceVersion the write replaced. While the
cache still shows that resourceVersion, a sync reads the returned object instead;
once the cache shows any other, the cache is as new or newer and the kept object goes.
"""

from __future__ import annotations

from mpi_operator.api.object_model import Obj


def _resource_version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class OwnStatusWrites:
    """Per MPIJob key, the object our last status write returned (one per controller,
    dropped with the MPIJob)."""

    def __init__(self) -> None:
        # key -> (the resourceVersion the write replaced, the object it returned)
        self._written: dict[str, tuple[str, Obj]] = {}

    def wrote(self, key: str, replaced: Obj, returned: Obj) -> None:
        """The status write of ``key`` replaced ``replaced`` and answered ``returned``."""
        before, after = _resource_version(replaced), _resource_version(returned)
        if not before or not after or after == before:
            return  # nothing to tell the two apart by
        meta = returned.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)  # as the informer keeps it
        self._written[key] = (before, returned)

    def latest(self, key: str, cached: Obj | None) -> Obj | None:
        """The newest known object of ``key``: ``cached``, or the object our last status
        write returned while ``cached`` is still the one it replaced."""
        kept = self._written.get(key)
        if kept is None:
            return cached
        before, returned = kept
        if cached is not None and _resource_version(cached) == before:
            return returned
        del self._written[key]
        return cached

    def forget(self, key: str) -> None:
        self._written.pop(key, None)

    def __len__(self) -> int:
        return len(self._written)
