"""The reflector: keeps a local view of one resource in step with the server.

Cycle, as client-go's ListAndWatch:

1. **List** in pages (``limit`` / ``continue``), hand the complete list to the
   sink's ``replace`` with the list's resourceVersion. If a continue token
   expires mid-way (410) we fall back to one unpaginated list, as client-go's
   pager does.
2. **Watch** from that resourceVersion with ``allowWatchBookmarks=true`` and a
   randomised server-side ``timeoutSeconds`` (so a fleet of informers does not
   reconnect in lockstep). A busy stream is read in batches, ``watch_batch_window``
   apart (:mod:`~mpi_operator.client.watch_pacing`). Every event, bookmarks included, advances the
   resourceVersion we resume from.
3. When the server ends the watch cleanly (its timeout), re-watch at once
   from the last resourceVersion; nothing is lost because watches resume
   exactly after that version.
4. On network errors, and when a watch is refused with 429 or 5xx (at its
   start or as an ERROR event), re-watch from the last resourceVersion after a
   jittered exponential backoff (0.8 s doubling, reset after 2 min of health -
   client-go's defaults; capped lower, see :class:`Backoff`). Other errors
   relist.
5. On 410 Gone / "too old resource version" (etcd compacted past our
   version) relist from scratch; the sink diffs the new list against its
   cache and reports vanished objects as tombstones.

Deviation: every list is a consistent read from etcd (no ``resourceVersion=0``
served from the watch cache); slower on huge clusters, never stale.

Lines that are not JSON, or objects without a name, are logged and skipped;
they never stall the stream. An object the decoder refuses (nested past orjson's
limit: :mod:`~mpi_operator.client.decoding`) is skipped by the list and the watch
alike, and handed to ``on_undecodable``; if it was cached it is forgotten, as a relist
would (the sink's ``forget``). The rest of the list is served.

:meth:`Reflector.stalled_for` says how long the reflector has been unable to sync:
since its first list started or last received a page (a long first list that moves on
is not stuck), or since the first of its failed lists; a successful list ends it.
``/healthz`` fails once that passes :data:`STALLED_AFTER`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from contextlib import aclosing
from typing import Any, Protocol

import structlog

from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.client.clock import Clock, RealClock
from mpi_operator.client.decoding import Undecodable, decode_watch_line
from mpi_operator.client.kubeapi import (
    NETWORK_ERRORS,
    ApiError,
    KubeClient,
    Resource,
    is_gone,
)
from mpi_operator.client.watch_pacing import WATCH_BATCH_WINDOW

log = structlog.get_logger()

#: A reflector unable to list for this long makes ``/healthz`` fail: a frozen cache is
#: a silent outage for every job, and a restart is the one remedy a process has.
STALLED_AFTER = 60.0


class ReflectorSink(Protocol):
    """What a reflector feeds: the informer's store and handlers."""

    def replace(self, objs: list[Obj], resource_version: str) -> None: ...

    def on_watch_event(self, event_type: str, obj: Obj) -> None: ...

    def forget(self, key: str) -> None:
        """The object ``key`` can no longer be read: drop it as a relist would."""
        ...


class GoneError(Exception):
    """The resourceVersion we wanted to resume from no longer exists."""


class Backoff:
    """Jittered exponential backoff that resets after a quiet period."""

    def __init__(
        self,
        clock: Clock,
        *,
        initial: float = 0.8,
        # Deviation: client-go waits up to 30 s (60 s with jitter); a 10 s cap keeps
        # final statuses within 30 s of an API server coming back.
        maximum: float = 10.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        rng: random.Random | None = None,
    ) -> None:
        self._clock = clock
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self._rng = rng or random.Random()
        self._current = initial
        self._last: float | None = None

    def next(self) -> float:
        now = self._clock.monotonic()
        if self._last is None or now - self._last > self.reset_after:
            self._current = self.initial
        self._last = now
        base = self._current
        self._current = min(self._current * self.factor, self.maximum)
        return min(base + base * self.jitter * self._rng.random(), self.maximum)


def _name_of(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return None
    name = meta.get("name")
    return name if isinstance(name, str) and name else None


class Reflector:
    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        sink: ReflectorSink,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        min_watch_timeout: float = 300.0,
        clock: Clock | None = None,
        backoff: Backoff | None = None,
        rng: random.Random | None = None,
        watch_batch_window: float = WATCH_BATCH_WINDOW,
    ) -> None:
        self.client = client
        self.resource = resource
        self.sink = sink
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self.min_watch_timeout = min_watch_timeout
        self.watch_batch_window = watch_batch_window
        self._clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._backoff = backoff or Backoff(self._clock, rng=self._rng)
        self.last_sync_resource_version = ""
        self.relists = 0
        self.log = log.bind(resource=str(resource), namespace=namespace or "*")
        self.on_relist: Callable[[], None] | None = None
        #: Told of each object skipped because it cannot be decoded.
        self.on_undecodable: Callable[[Resource, Undecodable], None] | None = None
        # Since when no list has succeeded (None: in sync); while ``_first_list`` the
        # first list is still under way, and each page it receives moves this on.
        self._stalled_since: float | None = None
        self._first_list = False

    # -- list ------------------------------------------------------------------
    def _fill_type(self, obj: Obj) -> Obj:
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        return obj

    async def _list_all(self, paged: bool) -> tuple[list[Obj], str]:
        items: list[Obj] = []
        cont: str | None = None
        rv = ""
        while True:
            page = await self.client.list(
                self.resource,
                self.namespace,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                limit=self.page_size if paged else None,
                continue_=cont,
                undecodable_items=True,
            )
            if self._first_list:
                self._stalled_since = self._clock.monotonic()
            meta = metadata_of(page)
            rv = str(meta.get("resourceVersion") or rv)
            for obj in page.get("items") or []:
                if isinstance(obj, Undecodable):
                    self._undecodable(obj)
                    continue
                if _name_of(obj) is None:
                    self.log.warning("skipping listed object without a name")
                    continue
                items.append(self._fill_type(obj))
            cont = meta.get("continue") or None
            if not paged or not cont:
                return items, rv

    async def list_and_replace(self) -> None:
        try:
            try:
                items, rv = await self._list_all(paged=self.page_size > 0)
            except ApiError as err:
                if not is_gone(err):
                    raise
                # The continue token expired between pages: read it all at once.
                self.log.info("list continuation expired; listing without pages")
                items, rv = await self._list_all(paged=False)
        except BaseException:
            self._list_failed()
            raise
        self._stalled_since = None
        self._first_list = False
        self.sink.replace(items, rv)
        self.last_sync_resource_version = rv
        self.relists += 1
        if self.on_relist is not None:
            self.on_relist()

    def _list_failed(self) -> None:
        """A list failed (or was cancelled): the stall, if any, counts from now on."""
        self._first_list = False
        if self._stalled_since is None:
            self._stalled_since = self._clock.monotonic()

    def stalled_for(self) -> float | None:
        """Seconds since the reflector last could sync, while it cannot; else None."""
        since = self._stalled_since
        return None if since is None else self._clock.monotonic() - since

    def _undecodable(self, item: Undecodable) -> None:
        if self.on_undecodable is None:
            self.log.warning(
                "skipping an object that cannot be decoded",
                object=item.key,
                reason=item.reason,
            )
            return
        try:
            self.on_undecodable(self.resource, item)
        except Exception:
            self.log.exception("reporting an undecodable object failed", object=item.key)

    # -- watch -----------------------------------------------------------------
    def _handle_undecodable_event(self, item: Undecodable) -> bool:
        self._undecodable(item)
        key = item.key
        if key is None:
            return False
        if item.event_type in ("ADDED", "MODIFIED", "DELETED"):
            try:
                self.sink.forget(key)
            except Exception:
                self.log.exception("failed to forget an undecodable object", object=key)
        if item.resource_version:
            self.last_sync_resource_version = item.resource_version
        return True

    def _handle_event(self, event: dict[str, Any] | bytes) -> bool:
        """Apply one watch event; returns True if it carried an object."""
        if isinstance(event, bytes):
            decoded = decode_watch_line(event)
            if isinstance(decoded, Undecodable):
                return self._handle_undecodable_event(decoded)
            event = decoded
        etype = event.get("type")
        obj = event.get("object")
        if etype == "ERROR":
            status = obj if isinstance(obj, dict) else {}
            err = ApiError(int(status.get("code") or 500), status)
            if is_gone(err):
                raise GoneError(err.message)
            raise err
        if not isinstance(obj, dict):
            self.log.warning("skipping watch event without an object", type=etype)
            return False
        rv = str(metadata_of(obj).get("resourceVersion") or "")
        if etype == "BOOKMARK":
            if rv:
                self.last_sync_resource_version = rv
            return True
        if etype not in ("ADDED", "MODIFIED", "DELETED"):
            self.log.warning("skipping watch event of unknown type", type=etype)
            return False
        if _name_of(obj) is None:
            self.log.warning("skipping watch object without a name", type=etype)
            return False
        try:
            self.sink.on_watch_event(etype, self._fill_type(obj))
        except Exception:
            self.log.exception("failed to apply watch event; skipping", type=etype)
        if rv:
            self.last_sync_resource_version = rv
        return True

    async def watch_once(self) -> None:
        """One watch request; returns when the server closes it cleanly."""
        timeout = int(self.min_watch_timeout * (1.0 + self._rng.random()))
        started = self._clock.monotonic()
        count = 0
        stream = self.client.watch(
            self.resource,
            self.namespace,
            resource_version=self.last_sync_resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=max(timeout, 1),
            batch_window=self.watch_batch_window,
        )
        async with aclosing(stream) as events:
            async for event in events:
                if self._handle_event(event):
                    count += 1
        if count == 0 and self._clock.monotonic() - started < 1.0:
            # A watch that ends at once with nothing in it is a symptom, not a timeout.
            raise ConnectionError("very short watch")

    async def run(self) -> None:
        """List, then watch forever; returns only when cancelled.

        A reflector that already synced once resumes watching from its last
        resourceVersion (and relists only if that has been compacted away)."""
        need_list = not self.last_sync_resource_version
        if need_list and self._stalled_since is None:
            self._stalled_since = self._clock.monotonic()
            self._first_list = True
        try:
            await self._run(need_list)
        finally:
            # Stopped: it no longer claims to follow the server, nor to be stuck.
            self._stalled_since = None
            self._first_list = False

    async def _run(self, need_list: bool) -> None:
        while True:
            watching = False
            try:
                if need_list:
                    await self.list_and_replace()
                    need_list = False
                watching = True
                await self.watch_once()
                continue
            except GoneError as err:
                self.log.info("watch resourceVersion expired; relisting", reason=str(err))
                need_list = True
            except ApiError as err:
                if is_gone(err):
                    self.log.info("resourceVersion expired; relisting", reason=str(err))
                    need_list = True
                elif watching and retriable_watch_error(err):
                    # client-go backs off and re-watches on 429 (and on internal errors
                    # mid-stream); deviation: every 5xx is retried so, at the start too.
                    self.log.info("watch refused; re-watching after a backoff", error=str(err))
                else:
                    self.log.warning("list/watch failed; relisting", error=str(err))
                    need_list = True
            except NETWORK_ERRORS as err:
                self.log.info(
                    "list/watch interrupted; retrying",
                    error=repr(err),
                    relist=need_list,
                )
            await self._clock.sleep(self._backoff.next())


def retriable_watch_error(err: ApiError) -> bool:
    """Throttled or a server error: the watch itself may succeed on the next try."""
    return err.status == 429 or 500 <= err.status < 600
