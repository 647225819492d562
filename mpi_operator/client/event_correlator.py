"""Event correlation, as client-go's EventCorrelator does it.

Three stages, each with an LRU cache of 4096 entries:

1. **Aggregation** (``EventAggregator``): events about the same object with
   the same source, type and reason but *different messages* are "similar".
   Once 10 distinct messages have been seen within 10 minutes, further ones
   are folded into a single event whose message is prefixed
   ``(combined from similar events): `` and which is keyed by the reason
   alone, so it is then counted rather than created anew.
2. **Deduplication** (``eventLogger``): an event whose key (everything
   including the message) was already written gets the name, first timestamp
   and resourceVersion of the earlier one, ``count + 1``, and a strategic
   merge patch of ``count``, ``lastTimestamp`` and ``message`` - so the sink
   PATCHes instead of creating a new Event.
3. **Spam filter** (``EventSourceObjectSpamFilter``): a token bucket per
   (source, object, type) - burst 25, refilling one token per 5 minutes; an
   event that finds the bucket empty is dropped.

Deviation: the aggregation window is measured on the monotonic clock rather
than the wall clock; timestamps written to Events still use the wall clock.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from mpi_operator.api.object_model import metadata_of
from mpi_operator.client.clock import Clock
from mpi_operator.client.ratelimit import TokenBucket

Event = dict[str, Any]

MAX_LRU_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL_SECONDS = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
COMBINED_PREFIX = "(combined from similar events): "

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    def __init__(self, size: int = MAX_LRU_ENTRIES) -> None:
        self.size = size
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def add(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.size:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


def format_time(clock: Clock) -> str:
    """metav1.Time (second precision, RFC 3339, UTC)."""
    return clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")


def _obj(ev: Event) -> dict[str, Any]:
    involved: dict[str, Any] = ev.get("involvedObject") or {}
    return involved


def _src(ev: Event) -> dict[str, Any]:
    source: dict[str, Any] = ev.get("source") or {}
    return source


def event_key(ev: Event) -> str:
    o, s = _obj(ev), _src(ev)
    return "".join(
        str(x or "")
        for x in (
            s.get("component"),
            s.get("host"),
            o.get("kind"),
            o.get("namespace"),
            o.get("name"),
            o.get("fieldPath"),
            o.get("uid"),
            o.get("apiVersion"),
            ev.get("type"),
            ev.get("reason"),
            ev.get("message"),
        )
    )


def spam_key(ev: Event) -> str:
    o, s = _obj(ev), _src(ev)
    return "".join(
        str(x or "")
        for x in (
            s.get("component"),
            s.get("host"),
            o.get("kind"),
            o.get("namespace"),
            o.get("name"),
            o.get("uid"),
            o.get("apiVersion"),
            ev.get("type"),
        )
    )


def aggregate_key(ev: Event) -> str:
    o, s = _obj(ev), _src(ev)
    return "".join(
        str(x or "")
        for x in (
            s.get("component"),
            s.get("host"),
            o.get("kind"),
            o.get("namespace"),
            o.get("name"),
            o.get("uid"),
            o.get("apiVersion"),
            ev.get("type"),
            ev.get("reason"),
            ev.get("reportingComponent"),
            ev.get("reportingInstance"),
        )
    )


@dataclass
class _AggregateRecord:
    local_keys: set[str] = field(default_factory=set)
    last_seen: float = 0.0


@dataclass
class _Observation:
    count: int
    first_timestamp: Any
    name: str
    resource_version: str


@dataclass
class CorrelationResult:
    event: Event
    patch: dict[str, Any] | None
    skip: bool = False


class EventCorrelator:
    def __init__(
        self,
        clock: Clock,
        *,
        max_events: int = AGGREGATE_MAX_EVENTS,
        interval: float = AGGREGATE_INTERVAL_SECONDS,
        spam_burst: int = SPAM_BURST,
        spam_qps: float = SPAM_QPS,
        cache_size: int = MAX_LRU_ENTRIES,
    ) -> None:
        self.clock = clock
        self.max_events = max_events
        self.interval = interval
        self.spam_burst = spam_burst
        self.spam_qps = spam_qps
        self._aggregates: LRU[str, _AggregateRecord] = LRU(cache_size)
        self._observations: LRU[str, _Observation] = LRU(cache_size)
        self._spam: LRU[str, TokenBucket] = LRU(cache_size)

    def _aggregate(self, ev: Event) -> tuple[Event, str]:
        akey, local = aggregate_key(ev), str(ev.get("message") or "")
        now = self.clock.monotonic()
        record = self._aggregates.get(akey)
        if record is None or now - record.last_seen > self.interval:
            record = _AggregateRecord()
        record.local_keys.add(local)
        record.last_seen = now
        self._aggregates.add(akey, record)
        if len(record.local_keys) < self.max_events:
            return ev, event_key(ev)
        # Keep the set of distinct messages bounded once we aggregate.
        record.local_keys.pop()
        stamp = format_time(self.clock)
        involved = _obj(ev)
        combined: Event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{involved.get('name', '')}.{self._unix_nanos():x}",
                "namespace": ev["metadata"]["namespace"],
            },
            "involvedObject": copy.deepcopy(involved),
            "reason": ev.get("reason"),
            "message": COMBINED_PREFIX + str(ev.get("message") or ""),
            "type": ev.get("type"),
            "source": copy.deepcopy(_src(ev)),
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
        }
        for field_name in ("reportingComponent", "reportingInstance"):
            if field_name in ev:
                combined[field_name] = ev[field_name]
        return combined, akey

    def _unix_nanos(self) -> int:
        return int(self.clock.now().timestamp() * 1e9)

    def _observe(self, ev: Event, key: str) -> tuple[Event, dict[str, Any] | None]:
        event = copy.deepcopy(ev)
        patch: dict[str, Any] | None = None
        last = self._observations.get(key)
        if last is not None and last.count > 0:
            event["metadata"]["name"] = last.name
            if last.resource_version:
                event["metadata"]["resourceVersion"] = last.resource_version
            else:
                event["metadata"].pop("resourceVersion", None)
            event["firstTimestamp"] = last.first_timestamp
            event["count"] = last.count + 1
            patch = {
                "count": event["count"],
                "lastTimestamp": event.get("lastTimestamp"),
                "message": event.get("message"),
            }
        self._observations.add(
            key,
            _Observation(
                int(event.get("count") or 1),
                event.get("firstTimestamp"),
                event["metadata"]["name"],
                str(event["metadata"].get("resourceVersion") or ""),
            ),
        )
        return event, patch

    def _filtered(self, ev: Event) -> bool:
        key = spam_key(ev)
        bucket = self._spam.get(key)
        if bucket is None:
            bucket = TokenBucket(self.spam_qps, self.spam_burst, self.clock)
        accepted = bucket.try_accept()
        self._spam.add(key, bucket)
        return not accepted

    def correlate(self, ev: Event) -> CorrelationResult:
        aggregated, key = self._aggregate(ev)
        observed, patch = self._observe(aggregated, key)
        if self._filtered(observed):
            return CorrelationResult(observed, None, skip=True)
        return CorrelationResult(observed, patch)

    def update_state(self, ev: Event) -> None:
        """Remember what the server stored, so the next duplicate patches it."""
        meta = metadata_of(ev)
        self._observations.add(
            event_key(ev),
            _Observation(
                int(ev.get("count") or 1),
                ev.get("firstTimestamp"),
                str(meta.get("name") or ""),
                str(meta.get("resourceVersion") or ""),
            ),
        )
