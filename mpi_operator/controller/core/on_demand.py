"""The cache of a child kind whose API may be served only after the operator started.

The cache of a child kind whose CRD may be installed, or whose API group enabled, after
the operator started (every PodGroup: the t9k scheduler's, and the gang scheduler's of
--gang-scheduling, whose API a cluster may lack as well): its informer is not started
with the others, whose initial sync would wait forever for a kind that is not served,
but the first time a sync needs it, once one LIST shows the kind served. From then on
the sync reads the cache, as for every other child; until then a job that needs the
kind fails its sync with :class:`MissingCRDError`, naming the CRD or API group, and is
retried; jobs that do not need it, and the process, carry on. Its informer never
lists an API that is not served (a LIST that 404s again and again would mark the
informer stalled, and the whole process unhealthy).
"""

from __future__ import annotations

from mpi_operator.client import KubeClient, Lister, SharedInformer
from mpi_operator.client.errors import ApiError
from mpi_operator.controller.core.crds import raise_if_not_served
from mpi_operator.controller.core.owner import SyncError

#: How long a sync waits for the cache's first LIST before it is retried.
SYNC_TIMEOUT = 30.0


class OnDemandCache:
    def __init__(
        self, informer: SharedInformer, needed_for: str, sync_timeout: float = SYNC_TIMEOUT
    ) -> None:
        self.informer = informer
        self.needed_for = needed_for
        self.sync_timeout = sync_timeout

    async def lister(self, client: KubeClient, namespace: str) -> Lister:
        """The cache's lister once it has synced; starts it on first use."""
        informer = self.informer
        if informer.has_synced():
            return informer.lister
        try:
            await client.list(informer.resource, namespace, limit=1, undecodable_items=True)
        except ApiError as err:
            raise_if_not_served(err, informer.resource, self.needed_for)
            raise
        informer.start()
        if not await informer.wait_for_sync(self.sync_timeout):
            raise SyncError(f"the cache of {informer.resource} has not synced yet")
        return informer.lister
