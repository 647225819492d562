"""Reporting the objects the informers skip because they cannot be decoded.

Each object version is reported once (a relist finds it again, and so does every
re-watch that starts before it): one log line, one count in
``mpi_operator_undecodable_objects_total{resource}``, and a Warning event
``Undecodable`` on the object when its name could be read, so that its owner learns why
the operator ignores it. A deleted object gets no event.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict

import structlog
from prometheus_client import REGISTRY, CollectorRegistry, Counter

from mpi_operator.client.decoding import Undecodable
from mpi_operator.client.events import WARNING, EventRecorder
from mpi_operator.client.resources import Resource

log = structlog.get_logger(__name__)

REASON = "Undecodable"
#: Object versions remembered as reported (the oldest forgotten first).
REMEMBERED = 10_000

# Keyed weakly by registry: an id() could be reused by a later registry.
_counters: weakref.WeakKeyDictionary[CollectorRegistry, Counter] = weakref.WeakKeyDictionary()


def undecodable_counter(registry: CollectorRegistry) -> Counter:
    counter = _counters.get(registry)
    if counter is None:
        counter = Counter(
            "mpi_operator_undecodable_objects_total",
            "Objects (versions) the informers skipped because they cannot be decoded",
            ["resource"],
            registry=registry,
        )
        _counters[registry] = counter
    return counter


class UndecodableReporter:
    """Logs, counts and records an event for each undecodable object version once."""

    def __init__(
        self, recorder: EventRecorder | None, registry: CollectorRegistry | None = None
    ) -> None:
        self.recorder = recorder
        self._counter = undecodable_counter(REGISTRY if registry is None else registry)
        self._seen: OrderedDict[tuple[str, ...], None] = OrderedDict()

    def __call__(self, resource: Resource, item: Undecodable) -> None:
        deleted = item.event_type == "DELETED"
        seen = (
            str(resource),
            item.namespace or "",
            item.name or "",
            item.uid or "",
            item.resource_version or "",
            "deleted" if deleted else "",
            "" if item.name else item.reason[:200],
        )
        if seen in self._seen:
            self._seen.move_to_end(seen)
            return
        self._seen[seen] = None
        if len(self._seen) > REMEMBERED:
            self._seen.popitem(last=False)
        self._counter.labels(resource=str(resource)).inc()
        log.warning(
            "skipping an object that cannot be decoded",
            resource=str(resource),
            object=item.key,
            resourceVersion=item.resource_version,
            event_type=item.event_type,
            reason=item.reason,
        )
        if self.recorder is None or not item.name or deleted:
            return
        kind = item.kind or resource.kind
        involved = {
            "apiVersion": item.api_version or resource.api_version,
            "kind": kind,
            "metadata": {
                "namespace": item.namespace,
                "name": item.name,
                "uid": item.uid,
                "resourceVersion": item.resource_version,
            },
        }
        message = (
            f"{kind} {item.key} cannot be decoded and is ignored until it changes: {item.reason}"
        )
        self.recorder.event(involved, WARNING, REASON, message)
