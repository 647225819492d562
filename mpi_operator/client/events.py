"""The event recorder: core/v1 Events that never block a reconcile.

``recorder.event(obj, "Normal", "Created", "...")`` builds the Event and puts
it on a bounded asyncio queue (1000, as client-go's broadcaster); when the
queue is full the event is dropped and ``mpi_operator_events_dropped_total``
is incremented, so a slow or unreachable API server can never stall a
controller. One background task correlates each event (see
:mod:`mpi_operator.client.event_correlator`) and writes it: POST for a new
Event, strategic-merge PATCH of count/lastTimestamp/message for a repeat
(falling back to POST if the earlier Event has been garbage-collected).

Like client-go, an error answered by the API server gives up on that event at
once (so does a write the leadership fence refuses), while a network error is
retried up to 12 times, 10 s apart (the first sleep randomised so that
recorders do not retry in lockstep).

Events are recorded as the reference operator's controller records them: source
component (and ``reportingComponent``, as client-go sets it from the source)
``mpi-job-controller``. The reference's ``mpi-operator`` recorder only reports
leader election; MPIJob events came from the controller's own. Keeping the string
means that an operator replaced in place keeps a job's events under one source, and
``--field-selector source=mpi-job-controller`` (or an alert on it) keeps matching.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import weakref
from collections.abc import Mapping
from typing import Any, Protocol

import structlog
from prometheus_client import REGISTRY, CollectorRegistry, Counter

from mpi_operator.api.object_model import metadata_of
from mpi_operator.client.clock import Clock, RealClock
from mpi_operator.client.event_correlator import EventCorrelator, format_time
from mpi_operator.client.fence import FencedError
from mpi_operator.client.kubeapi import EVENTS, NETWORK_ERRORS, ApiError, KubeClient

log = structlog.get_logger()

Event = dict[str, Any]

NORMAL = "Normal"
WARNING = "Warning"
MAX_MESSAGE_LENGTH = 1024
QUEUE_SIZE = 1000
MAX_TRIES = 12
RETRY_SLEEP = 10.0
#: The reference's controllerAgentName: the source of every MPIJob event (both kinds).
COMPONENT = "mpi-job-controller"


class EventSink(Protocol):
    async def create(self, event: Event) -> Event: ...

    async def patch(self, event: Event, patch: Mapping[str, Any]) -> Event: ...


class KubeEventSink:
    """Writes Events through the rate-limited :class:`KubeClient`."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def create(self, event: Event) -> Event:
        return await self.client.create(EVENTS, event["metadata"]["namespace"], event)

    async def patch(self, event: Event, patch: Mapping[str, Any]) -> Event:
        meta = event["metadata"]
        return await self.client.patch(
            EVENTS, meta["namespace"], meta["name"], dict(patch), patch_type="strategic"
        )


# Keyed weakly by registry: an id() could be reused by a later registry.
_dropped: weakref.WeakKeyDictionary[CollectorRegistry, Counter] = weakref.WeakKeyDictionary()


def _dropped_counter(registry: CollectorRegistry) -> Counter:
    counter = _dropped.get(registry)
    if counter is None:
        counter = Counter(
            "mpi_operator_events_dropped_total",
            "Events dropped because the recorder's queue was full",
            registry=registry,
        )
        _dropped[registry] = counter
    return counter


def object_reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = metadata_of(obj)
    ref = {
        "kind": obj.get("kind"),
        "apiVersion": obj.get("apiVersion"),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
    }
    return {k: v for k, v in ref.items() if v}


def truncate_message(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE_LENGTH else message[:MAX_MESSAGE_LENGTH]


class EventRecorder:
    def __init__(
        self,
        sink: EventSink | KubeClient,
        *,
        component: str = COMPONENT,
        host: str = "",
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        queue_size: int = QUEUE_SIZE,
        correlator: EventCorrelator | None = None,
        retry_sleep: float = RETRY_SLEEP,
        rng: random.Random | None = None,
    ) -> None:
        self.sink: EventSink = KubeEventSink(sink) if isinstance(sink, KubeClient) else sink
        self.component = component
        self.host = host
        self.clock: Clock = clock or RealClock()
        self.correlator = correlator or EventCorrelator(self.clock)
        self.retry_sleep = retry_sleep
        self._rng = rng or random.Random()
        self._queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=queue_size)
        self._dropped = _dropped_counter(registry if registry is not None else REGISTRY)
        self._task: asyncio.Task[None] | None = None

    # -- producing ---------------------------------------------------------
    def make_event(
        self, obj: Mapping[str, Any], event_type: str, reason: str, message: str
    ) -> Event:
        ref = object_reference(obj)
        stamp = format_time(self.clock)
        nanos = int(self.clock.now().timestamp() * 1e9)
        source: dict[str, str] = {"component": self.component}
        if self.host:
            source["host"] = self.host
        event: Event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref.get('name', '')}.{nanos:x}",
                "namespace": ref.get("namespace") or "default",
            },
            "involvedObject": ref,
            "reason": reason,
            "message": truncate_message(message),
            "type": event_type,
            "source": source,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "reportingComponent": self.component,
        }
        if self.host:
            event["reportingInstance"] = self.host
        return event

    def event(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        """Record an event; never blocks, never raises."""
        if event_type not in (NORMAL, WARNING):
            log.error("unsupported event type; dropping event", type=event_type, reason=reason)
            return
        try:
            ev = self.make_event(obj, event_type, reason, message)
            self._queue.put_nowait(ev)
        except asyncio.QueueFull:
            self._dropped.inc()
            log.warning("event queue full; dropping event", reason=reason)
        except Exception:
            log.exception("could not build event", reason=reason)

    # -- writing -----------------------------------------------------------
    async def _write(self, event: Event, patch: Mapping[str, Any] | None) -> bool:
        """One attempt; True when done (written, or given up for good)."""
        try:
            written: Event | None = None
            if patch is not None and int(event.get("count") or 1) > 1:
                try:
                    written = await self.sink.patch(event, patch)
                except ApiError as err:
                    if err.status != 404:
                        raise
            if written is None:
                fresh = dict(event)
                fresh["metadata"] = {
                    k: v for k, v in event["metadata"].items() if k != "resourceVersion"
                }
                written = await self.sink.create(fresh)
            self.correlator.update_state(written)
            return True
        except FencedError:
            # Leadership lapsed: a successor records its own events.
            log.info("not leading; event not written", reason=event.get("reason"))
            return True
        except ApiError as err:
            level = log.debug if err.reason == "AlreadyExists" else log.error
            level("server rejected event; not retrying", error=str(err))
            return True
        except NETWORK_ERRORS as err:
            log.warning("unable to write event; may retry", error=repr(err))
            return False

    async def record_to_sink(self, raw: Event) -> None:
        result = self.correlator.correlate(raw)
        if result.skip:
            return
        for attempt in range(1, MAX_TRIES + 1):
            if await self._write(result.event, result.patch):
                return
            if attempt == MAX_TRIES:
                log.error("unable to write event; retry limit exceeded")
                return
            delay = self.retry_sleep * (self._rng.random() if attempt == 1 else 1.0)
            await self.clock.sleep(delay)

    async def run(self) -> None:
        while True:
            ev = await self._queue.get()
            try:
                await self.record_to_sink(ev)
            except Exception:
                log.exception("event recording failed")
            finally:
                self._queue.task_done()

    def start(self) -> asyncio.Task[None]:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name="event-recorder")
        return self._task

    async def flush(self) -> None:
        """Wait until every queued event has been written (or given up)."""
        await self._queue.join()

    async def stop(self, drain_seconds: float = 0.0) -> None:
        if drain_seconds > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.join(), drain_seconds)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
