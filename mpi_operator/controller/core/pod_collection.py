"""Deleting many of a job's pods in one request: a delete of the pods collection.

selected by the job's labels (and, to keep finished pods, by ``status.phase``).

Used for a finished or suspended Kubeflow job's workers, a finished T9k job's workers
and a paused T9k job's pods. The collection is deleted only when the selector takes
nothing but the owner's pods: every pod in the cache that it matches must be
controlled by the owner. Otherwise, or while the API server refuses such deletes with
Forbidden or MethodNotAllowed (the operator's role lacks ``deletecollection`` on pods),
the pods go one request each.

Deviation: the reference deletes each pod with a request of its own, so a 2,000-worker
job's cleanup took 2,000 writes of the client's budget; this takes one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from mpi_operator.api.object_model import Obj
from mpi_operator.client import PODS
from mpi_operator.client.errors import ApiError
from mpi_operator.controller.core.context import COLLECTION_RETRY_S, CoreContext
from mpi_operator.controller.core.objects import name_of, uid_of
from mpi_operator.controller.core.owner import Owner
from mpi_operator.controller.core.pods import delete_pods

log = structlog.get_logger(__name__)

#: From this many pods to delete, they go in one delete of their collection.
COLLECTION_FROM = 2
_NOT_FOUND = 404
#: Forbidden (no RBAC right) and MethodNotAllowed: the one-by-one fallback works.
_REFUSED = (403, 405)


@dataclass(frozen=True, slots=True)
class PodCollection:
    """The pods one delete takes: in ``namespace``, those ``label_selector`` matches,
    of them only those ``field_selector`` (``status.phase!=...`` terms) keeps, if any."""

    namespace: str
    label_selector: str
    field_selector: str | None = None


async def delete_pod_collection(
    ctx: CoreContext,
    owner: Owner,
    collection: PodCollection,
    members: Callable[[], Sequence[Obj]],
    names: Sequence[str],
) -> None:
    """Deletes the pods ``names`` (those of ``collection`` to go, as the cache shows
    them): in one delete of ``collection`` when there are at least
    :data:`COLLECTION_FROM` of them and it may be used, else one request each, at most
    500 in one sync (:func:`~.pods.delete_pods`).
    ``members``: lists every pod in the cache that the collection's label selector
    matches (called only when there is a pod to delete).

    Pods whose delete an earlier sync sent are not deleted again while the
    cache still shows them (:class:`~.state.DeletionExpectations`)."""
    if not names:
        return
    now = ctx.clock.monotonic()
    cached = members()
    sent = ctx.state.deletions.pending(owner.key, now)
    if sent:
        # Deleted by an earlier sync whose deletes the cache does not show yet.
        gone = {name_of(pod) for pod in cached if uid_of(pod) in sent}
        names = [name for name in names if name not in gone]
        if not names:
            return
    if len(names) >= COLLECTION_FROM and await _delete_collection(ctx, owner, collection, cached):
        # It also took the pods created for the owner that the cache has yet to show:
        # none is in flight any more (the owner's syncs never overlap, so no create is).
        ctx.state.creations.clear(owner.key)
    else:
        uids = {name_of(pod): uid_of(pod) for pod in cached}
        names = await delete_pods(ctx, owner.key, collection.namespace, names, uids=uids)
    # Kept for the deletes one by one too: a pod deleted here that turns Failed while
    # it terminates is not a failure for the failure policy to judge.
    doomed = set(names)
    ctx.state.deletions.expect(
        owner.key, (uid_of(pod) for pod in cached if name_of(pod) in doomed), now
    )


async def _delete_collection(
    ctx: CoreContext,
    owner: Owner,
    collection: PodCollection,
    members: Sequence[Obj],
) -> bool:
    """True once the collection is deleted; False when it may not be (a pod the label
    selector matches is not the owner's, or the API server refused lately)."""
    deletes = ctx.collection_deletes
    if not deletes.allowed(ctx.clock.monotonic()):
        return False
    if not all(owner.controls(pod) for pod in members):
        return False
    try:
        await ctx.client.delete_collection(
            PODS,
            collection.namespace,
            label_selector=collection.label_selector,
            field_selector=collection.field_selector,
        )
    except ApiError as err:
        if err.status == _NOT_FOUND:
            return True  # the namespace is gone, and the pods with it
        if err.status not in _REFUSED:
            raise
        deletes.refused_at = ctx.clock.monotonic()
        log.warning(
            "deleting pods one by one: deletecollection on pods was refused",
            mpijob=owner.key,
            status=err.status,
            retry_after_s=COLLECTION_RETRY_S,
        )
        return False
    return True
