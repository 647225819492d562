"""Shared informers (their factory: :mod:`mpi_operator.client.informer_factory`).

A :class:`SharedInformer` owns one reflector (one LIST+WATCH) for a resource,
namespace and selector pair (one per namespace when given a list of them),
one :class:`~mpi_operator.client.store.Indexer`,
and any number of event handlers. It applies the transform (by default
dropping ``metadata.managedFields``, which is most of an object's bytes),
updates the cache, then notifies handlers - in that order, so a handler that
reads the lister sees the new state, as with client-go.

Notifications follow client-go's sharedIndexInformer:

* a listed or watched object not yet cached -> ``on_add(obj)``;
* one already cached -> ``on_update(old, new)`` - also after a relist and on
  resync, when the resourceVersion is unchanged; handlers that only care about
  real changes compare ``old`` and ``new`` resourceVersions;
* a watched delete -> ``on_delete(obj)``; an object that vanished while we were
  not watching (found by diffing a relist) -> ``on_delete(DeletedFinalStateUnknown)``.

Deviation: handlers are called inline rather than through client-go's
per-listener buffered goroutines, so they must be quick and non-blocking -
in practice they enqueue a key into a work queue. A failing handler is logged
and does not affect other handlers. Resync is informer-wide, not per handler.

An informer whose task ends on its own (an exception nothing handled) has a
frozen cache: it is logged once, with its traceback, :attr:`SharedInformer.failure`
says why, and the factory's ``wait_for_failure`` returns, so that the process
can report it and exit (client-go's informers cannot die this way; ours can,
through a bug).

An informer that runs but cannot list (:meth:`SharedInformer.stalled`) has a frozen
cache too, without dying: ``/healthz`` reports it. Objects the decoder refuses are
skipped (:mod:`~mpi_operator.client.decoding`) and handed to :meth:`report_undecodable_to`'s
callback.

"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.client.clock import Clock, RealClock
from mpi_operator.client.decoding import Undecodable
from mpi_operator.client.kubeapi import KubeClient, Resource
from mpi_operator.client.ratelimit import request_flow
from mpi_operator.client.reflector import Backoff, Reflector
from mpi_operator.client.selectors import Selector
from mpi_operator.client.store import (
    DeletedFinalStateUnknown,
    Indexer,
    IndexFunc,
    Lister,
    meta_namespace_key,
)

log = structlog.get_logger()

Transform = Callable[[Obj], Obj]


def strip_managed_fields(obj: Obj) -> Obj:
    """The default transform: managedFields are never needed by a controller."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


@dataclass
class EventHandler:
    on_add: Callable[[Obj], None] | None = None
    on_update: Callable[[Obj, Obj], None] | None = None
    on_delete: Callable[[Obj | DeletedFinalStateUnknown], None] | None = None


def namespace_scopes(namespace: str | Sequence[str | None] | None) -> tuple[str | None, ...]:
    """What each reflector lists: ``(None,)`` is the whole cluster, else one namespace each."""
    if namespace is None or namespace == "":
        return (None,)
    if isinstance(namespace, str):
        return (namespace,)
    return tuple(namespace) or (None,)


class _ScopedSink:
    """One namespace's reflector feeding the informer's shared store: a relist replaces
    only that namespace's objects."""

    def __init__(self, informer: SharedInformer, namespace: str | None) -> None:
        self.informer = informer
        self.namespace = namespace

    def replace(self, objs: list[Obj], resource_version: str) -> None:
        self.informer.replace_scope(self.namespace, objs)

    def on_watch_event(self, event_type: str, raw: Obj) -> None:
        self.informer.on_watch_event(event_type, raw)

    def forget(self, key: str) -> None:
        self.informer.forget(key)


def resource_version(obj: Obj | DeletedFinalStateUnknown) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        obj = obj.obj
    return str(metadata_of(obj).get("resourceVersion") or "")


class SharedInformer:
    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        *,
        namespace: str | Sequence[str | None] | None = None,
        label_selector: str | Selector | None = None,
        field_selector: str | None = None,
        transform: Transform | None = strip_managed_fields,
        resync_period: float = 0.0,
        indexers: Mapping[str, IndexFunc] | None = None,
        clock: Clock | None = None,
        page_size: int = 500,
        min_watch_timeout: float = 300.0,
        backoff: Backoff | None = None,
    ) -> None:
        self.resource = resource
        self.namespaces = namespace_scopes(namespace)
        self.label_selector = str(label_selector) if label_selector is not None else None
        self.field_selector = field_selector
        self.transform = transform
        self.resync_period = resync_period
        self.indexer = Indexer()
        if indexers:
            self.indexer.add_indexers(indexers)
        self.lister = Lister(self.indexer)
        self._clock: Clock = clock or RealClock()
        self._handlers: list[EventHandler] = []
        self._synced = False
        self._synced_event = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: Why the informer stopped on its own (None while it runs or after stop()).
        self.failure: str | None = None
        self._died = asyncio.Event()
        self._on_failure: list[Callable[[SharedInformer], None]] = []
        # Deviation: client-go has one informer per namespace; here one store, a reflector each.
        self._sinks = [_ScopedSink(self, ns) for ns in self.namespaces]
        self._unsynced = {ns for ns in self.namespaces}
        self.reflectors = [
            Reflector(
                client,
                resource,
                sink,
                namespace=sink.namespace,
                label_selector=self.label_selector or None,
                field_selector=field_selector,
                page_size=page_size,
                min_watch_timeout=min_watch_timeout,
                clock=self._clock,
                backoff=backoff,
            )
            for sink in self._sinks
        ]
        self.reflector = self.reflectors[0]
        self.log = log.bind(
            resource=str(resource), namespace=",".join(ns or "*" for ns in self.namespaces)
        )

    # -- handlers ------------------------------------------------------------
    def add_event_handler(
        self,
        handler: EventHandler | None = None,
        *,
        on_add: Callable[[Obj], None] | None = None,
        on_update: Callable[[Obj, Obj], None] | None = None,
        on_delete: Callable[[Obj | DeletedFinalStateUnknown], None] | None = None,
    ) -> EventHandler:
        """Register a handler; it is replayed an add for every cached object."""
        h = handler or EventHandler(on_add, on_update, on_delete)
        self._handlers.append(h)
        if h.on_add is not None:
            for obj in self.indexer.list():
                self._call(h.on_add, obj)
        return h

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            self.log.exception("event handler failed")

    def _notify_add(self, obj: Obj) -> None:
        for h in list(self._handlers):
            if h.on_add is not None:
                self._call(h.on_add, obj)

    def _notify_update(self, old: Obj, new: Obj) -> None:
        for h in list(self._handlers):
            if h.on_update is not None:
                self._call(h.on_update, old, new)

    def _notify_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        for h in list(self._handlers):
            if h.on_delete is not None:
                self._call(h.on_delete, obj)

    # -- reflector sink ------------------------------------------------------
    def _transform(self, obj: Obj) -> Obj | None:
        if self.transform is None:
            return obj
        try:
            return self.transform(obj)
        except Exception:
            self.log.exception("transform failed; skipping object")
            return None

    def _upsert(self, obj: Obj) -> None:
        old = self.indexer.add(obj)
        if old is None:
            self._notify_add(obj)
        else:
            self._notify_update(old, obj)

    def replace(self, objs: list[Obj], resource_version: str) -> None:
        """The whole store's contents (a single reflector's relist)."""
        for ns in self.namespaces:
            self.replace_scope(ns, objs if ns is None else [o for o in objs if _ns(o) == ns])

    def replace_scope(self, namespace: str | None, objs: list[Obj]) -> None:
        """A relist of ``namespace`` (None: everything): objects of it missing from
        ``objs`` are deleted; other namespaces' objects are left alone."""
        seen: set[str] = set()
        for raw in objs:
            obj = self._transform(raw)
            if obj is None:
                continue
            seen.add(meta_namespace_key(obj))
            self._upsert(obj)
        prefix = f"{namespace}/" if namespace is not None else ""
        for key in self.indexer.list_keys():
            if key not in seen and key.startswith(prefix):
                last = self.indexer.delete_key(key)
                if last is not None:
                    self._notify_delete(DeletedFinalStateUnknown(key, last))
        self._unsynced.discard(namespace)
        if not self._synced and not self._unsynced:
            self._synced = True
            self._synced_event.set()

    def on_watch_event(self, event_type: str, raw: Obj) -> None:
        obj = self._transform(raw)
        if obj is None:
            return
        if event_type == "DELETED":
            old = self.indexer.delete(obj)
            if old is not None:
                self._notify_delete(obj)
            return
        self._upsert(obj)

    def forget(self, key: str) -> None:
        """The object ``key`` can no longer be read (it cannot be decoded): it leaves the
        cache as if a relist had not found it."""
        last = self.indexer.delete_key(key)
        if last is not None:
            self._notify_delete(DeletedFinalStateUnknown(key, last))

    def report_undecodable_to(self, callback: Callable[[Resource, Undecodable], None]) -> None:
        """``callback(resource, item)`` for each object skipped as undecodable."""
        for reflector in self.reflectors:
            reflector.on_undecodable = callback

    def stalled(self, longer_than: float) -> list[str]:
        """One line per reflector that has been unable to list for over ``longer_than``
        seconds (while the informer runs)."""
        if self._task is None or self._task.done():
            return []
        lines = []
        for reflector in self.reflectors:
            stalled = reflector.stalled_for()
            if stalled is not None and stalled > longer_than:
                where = reflector.namespace or "all namespaces"
                lines.append(f"{self.resource} in {where}: not synced for {stalled:.0f}s")
        return lines

    # -- lifecycle -----------------------------------------------------------
    def has_synced(self) -> bool:
        return self._synced

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    async def _resync_loop(self) -> None:
        while True:
            await self._clock.sleep(self.resync_period)
            if self._synced:
                for obj in self.indexer.list():
                    self._notify_update(obj, obj)

    async def _run_shared(self) -> None:
        # Its lists and watches are everyone's, whichever sync started it (a cache
        # started on demand): not in that job's request flow.
        with request_flow(""):
            await self.run()

    async def run(self) -> None:
        """Run until cancelled."""
        if self.resync_period <= 0 and len(self.reflectors) == 1:
            await self.reflector.run()
            return
        async with asyncio.TaskGroup() as tg:
            for reflector in self.reflectors:
                tg.create_task(reflector.run())
            if self.resync_period > 0:
                tg.create_task(self._resync_loop())

    def start(self) -> asyncio.Task[None]:
        if self._task is None:
            self._task = asyncio.create_task(self._run_shared(), name=f"informer-{self.resource}")
            self._task.add_done_callback(self._on_task_done)
        return self._task

    def on_failure(self, callback: Callable[[SharedInformer], None]) -> None:
        """``callback(informer)`` runs once if the informer dies (not when stopped)."""
        self._on_failure.append(callback)

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        if task is not self._task or task.cancelled():
            return  # stop() let go of it first, or the loop is closing: a requested end
        err = task.exception()
        self.failure = f"{type(err).__name__}: {err}" if err is not None else "stopped on its own"
        self.log.error(
            "informer died; its cache no longer follows the API server",
            failure=self.failure,
            exc_info=err,
        )
        self._died.set()
        for callback in self._on_failure:
            try:
                callback(self)
            except Exception:
                self.log.exception("informer failure callback failed")

    async def stop(self) -> None:
        task = self._task
        if task is None or task.done():
            return  # never started, or it died: its done callback reports that
        self._task = None  # a requested end, not a death
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def wait_for_sync(self, sync_timeout: float | None = None) -> bool:
        """True once synced; False after ``sync_timeout`` or as soon as it dies."""
        waits = {
            asyncio.ensure_future(self._synced_event.wait()),
            asyncio.ensure_future(self._died.wait()),
        }
        try:
            await asyncio.wait(waits, timeout=sync_timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        return self._synced_event.is_set() and self.failure is None


def _ns(obj: Obj) -> str | None:
    namespace = metadata_of(obj).get("namespace")
    return namespace if isinstance(namespace, str) else None
