"""Our own writes of an MPIJob (its status, its ConfigMap) until the cache has seen them.

A key whose children changed while its sync ran is taken again as soon as that sync
is done, often before the watch event of the sync's own write has reached the
informer. A sync on that stale object computes from the old one and writes it with
the old resourceVersion: the API server answers 409 Conflict, and the key is retried
with backoff. It happened once in every 2,000-worker fan-out to the MPIJob's status,
and now and then to the ConfigMap's ``discover_hosts.sh``, rewritten as workers start.

Ours, not client-go's (whose controllers take the 409 and retry): the object the
write returned is kept, with the resourceVersions it supersedes: the one the write
replaced and, when that was a kept object itself, the ones that object superseded
(the watch may lag more than one write). While the cache shows one of those, a sync
reads the returned object instead; once it shows any other, the cache is as new or
newer and the kept object goes.
"""

from __future__ import annotations

from mpi_operator.api.object_model import Obj
from mpi_operator.controller.core.objects import resource_version_of

#: What was written: the MPIJob's status, or its ConfigMap (hostfile, discover_hosts.sh).
STATUS = "status"
CONFIG_MAP = "configmap"


class OwnWrites:
    """Per MPIJob key and object written (:data:`STATUS`, :data:`CONFIG_MAP`), the
    object our last write returned (one per controller, dropped with the MPIJob)."""

    def __init__(self) -> None:
        # key -> what -> (the resourceVersions superseded, the object the write returned)
        self._written: dict[str, dict[str, tuple[frozenset[str], Obj]]] = {}

    def wrote(self, key: str, replaced: Obj, returned: Obj, what: str = STATUS) -> None:
        """A write for ``key`` replaced ``replaced`` and answered ``returned``."""
        before, after = resource_version_of(replaced), resource_version_of(returned)
        if not before or not after or after == before:
            return  # nothing to tell the two apart by
        meta = returned.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)  # as the informer keeps it
        kept = self._written.setdefault(key, {})
        superseded = frozenset((before,))
        if (last := kept.get(what)) is not None and resource_version_of(last[1]) == before:
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
        if cached is not None and resource_version_of(cached) in superseded:
            return returned
        del kept[what]
        if not kept:
            del self._written[key]
        return cached

    def clear(self, key: str) -> None:
        self._written.pop(key, None)

    def __len__(self) -> int:
        return sum(len(kept) for kept in self._written.values())
