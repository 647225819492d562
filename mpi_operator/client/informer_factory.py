"""The shared informer factory, as client-go's informers.SharedInformerFactory.

:class:`SharedInformerFactory` hands out one :class:`~mpi_operator.client.informer.SharedInformer`
per (resource, namespaces, label selector, field selector), starts them as tasks,
waits for their initial sync with a timeout, and reports the first one that dies,
and those that cannot sync (:meth:`SharedInformerFactory.health_failures`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from mpi_operator.client.clock import Clock
from mpi_operator.client.decoding import Undecodable
from mpi_operator.client.informer import (
    SharedInformer,
    Transform,
    namespace_scopes,
    strip_managed_fields,
)
from mpi_operator.client.kubeapi import KubeClient, Resource
from mpi_operator.client.reflector import STALLED_AFTER
from mpi_operator.client.selectors import Selector
from mpi_operator.client.store import IndexFunc


@dataclass(frozen=True)
class InformerKey:
    resource: Resource
    namespace: tuple[str | None, ...]
    label_selector: str | None
    field_selector: str | None


class SharedInformerFactory:
    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str | Sequence[str | None] | None = None,
        resync_period: float = 0.0,
        transform: Transform | None = strip_managed_fields,
        clock: Clock | None = None,
        min_watch_timeout: float = 300.0,
        on_undecodable: Callable[[Resource, Undecodable], None] | None = None,
        stalled_after: float = STALLED_AFTER,
    ) -> None:
        """``on_undecodable``: told of each object an informer skips as undecodable.
        ``stalled_after``: seconds an informer may be unable to list before
        :meth:`health_failures` names it."""
        self.client = client
        self.on_undecodable = on_undecodable
        self.stalled_after = stalled_after
        self.namespace = namespace_scopes(namespace)
        self.resync_period = resync_period
        self.transform = transform
        self._clock = clock
        self.min_watch_timeout = min_watch_timeout
        self._informers: dict[InformerKey, SharedInformer] = {}
        self._on_demand: list[SharedInformer] = []
        self._died = asyncio.Event()

    def informer_for(
        self,
        resource: Resource,
        *,
        namespace: str | Sequence[str | None] | None = None,
        label_selector: str | Selector | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = None,
    ) -> SharedInformer:
        """The shared informer for this resource/selector, created on first use.

        ``namespace`` (one, or a list) defaults to the factory's (None: all namespaces);
        cluster-scoped resources are always listed cluster-wide. ``transform`` replaces
        the factory's for this informer; the first caller's choice holds for the
        informer's life (client-go's SetTransform, which must precede the start)."""
        ns = namespace_scopes(namespace) if namespace is not None else self.namespace
        if not resource.namespaced:
            ns = (None,)
        key = InformerKey(
            resource,
            ns,
            str(label_selector) if label_selector is not None else None,
            field_selector,
        )
        inf = self._informers.get(key)
        if inf is None:
            inf = SharedInformer(
                self.client,
                resource,
                namespace=ns,
                label_selector=key.label_selector,
                field_selector=field_selector,
                transform=transform if transform is not None else self.transform,
                resync_period=self.resync_period,
                indexers=indexers,
                clock=self._clock,
                min_watch_timeout=self.min_watch_timeout,
            )
            inf.on_failure(lambda _: self._died.set())
            if self.on_undecodable is not None:
                inf.report_undecodable_to(self.on_undecodable)
            self._informers[key] = inf
        elif indexers:
            missing = {k: v for k, v in indexers.items() if k not in inf.indexer.indexer_names()}
            if missing:
                inf.indexer.add_indexers(missing)
        return inf

    def on_demand(self, informer: SharedInformer) -> SharedInformer:
        """Reports the death of ``informer``, which its owner starts when first needed
        (:meth:`start` and :meth:`wait_for_cache_sync` leave it alone)."""
        informer.on_failure(lambda _: self._died.set())
        if self.on_undecodable is not None:
            informer.report_undecodable_to(self.on_undecodable)
        self._on_demand.append(informer)
        return informer

    def informers(self) -> list[SharedInformer]:
        return list(self._informers.values())

    def start(self) -> None:
        """Start every informer not yet running (safe to call repeatedly)."""
        for inf in self._informers.values():
            inf.start()

    async def wait_for_cache_sync(self, sync_timeout: float | None = None) -> bool:
        """True when every informer has synced within ``sync_timeout`` seconds."""
        results = await asyncio.gather(
            *(inf.wait_for_sync(sync_timeout) for inf in self._informers.values())
        )
        return all(results)

    def failures(self) -> list[str]:
        """One line per informer that died: its resource and why."""
        every = [*self._informers.values(), *self._on_demand]
        return [f"{inf.resource}: {inf.failure}" for inf in every if inf.failure]

    def health_failures(self) -> list[str]:
        """The :meth:`failures`, and one line per informer that has been unable to list
        for over ``stalled_after`` seconds (its cache is frozen while it lives on)."""
        every = [*self._informers.values(), *self._on_demand]
        stalled = [line for inf in every for line in inf.stalled(self.stalled_after)]
        return [*self.failures(), *stalled]

    async def wait_for_failure(self) -> str:
        """Returns (the :meth:`failures`) once an informer has died."""
        await self._died.wait()
        return "; ".join(self.failures())

    async def shutdown(self) -> None:
        every = [*self._informers.values(), *self._on_demand]
        await asyncio.gather(*(inf.stop() for inf in every))
