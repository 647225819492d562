"""Pod creation for both kinds: in slow-start batches, under creation expectations
(:mod:`~mpi_operator.controller.core.slowstart`), each pod created or, when it exists
and is the owner's, used. Pod deletion one request per pod, at most
:data:`~mpi_operator.controller.core.slowstart.MAX_DELETES_PER_SYNC` in one sync; many
at once as a collection (:mod:`~mpi_operator.controller.core.pod_collection`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

from mpi_operator.api.object_model import Obj
from mpi_operator.client import PODS
from mpi_operator.controller.core.context import CoreContext
from mpi_operator.controller.core.owner import Owner, create_pod, delete
from mpi_operator.controller.core.parallel import run_all
from mpi_operator.controller.core.pod_cache import slim_pod
from mpi_operator.controller.core.slowstart import (
    FIRST_TURN,
    MAX_DELETES_PER_SYNC,
    create_slow_start,
)

#: A pod to create: its name and the function that builds it (called only when its
#: batch comes, so that a sync that creates 500 pods of 20,000 builds 500).
PodToBuild = tuple[str, Callable[[], Obj]]


async def create_pods(
    ctx: CoreContext,
    owner: Owner,
    pods: Sequence[PodToBuild],
    kind: str,
    failed: tuple[str, str],
    *,
    answer: bool = True,
) -> dict[str, Obj]:
    """Creates ``pods`` (see :func:`create_slow_start`); returns those created,
    by name. ``kind`` and ``failed`` as for :func:`.owner.create_pod`.

    Without ``answer``, the API server's answer, a whole pod, is not decoded: for a
    caller that needs only a new pod's name, labels and owner, as sent, and the phase
    every new pod has (Pending), not its uid."""

    async def create(build: Callable[[], Obj]) -> Obj:
        pod = await create_pod(ctx, owner, build(), kind, failed, answer=answer)
        # Kept until the sync ends, like the cache's pods: a burst of 500 full pods
        # (spec) would be megabytes held for nothing.
        slim = slim_pod(pod)
        if not slim["status"]:
            slim["status"] = {"phase": "Pending"}  # as the API server sets it on create
        return slim

    pending = [(name, partial(create, build)) for name, build in pods]
    return await create_slow_start(
        ctx.state.creations, owner.key, pending, ctx.requeue, continuing=ctx.continuing(owner.key)
    )


def deletes_now(ctx: CoreContext, key: str, count: int) -> int:
    """How many of ``count`` pods to delete a sync of ``key`` sends: at most
    :data:`MAX_DELETES_PER_SYNC`, and, when more are to go, as many as a first
    slow-start batch on a turn that is not a continuation (as creates, see
    :data:`FIRST_TURN`)."""
    if count <= MAX_DELETES_PER_SYNC:
        return count
    return MAX_DELETES_PER_SYNC if ctx.continuing(key) else FIRST_TURN


async def delete_pods(
    ctx: CoreContext,
    key: str,
    namespace: str,
    names: Sequence[str],
    *,
    uids: Mapping[str, str] | None = None,
) -> Sequence[str]:
    """Deletes the first of the pods ``names`` (:func:`deletes_now`) all at once, as the
    Job controller does; returns those. When pods are left, the MPIJob ``key`` is
    requeued for them (behind the jobs waiting for a turn) once these deletes
    succeeded; the callers pass no pod that is already terminating, so the next sync
    goes on with the rest. ``uids``: the pods' uids by name, as the cache shows them;
    a pod's delete then takes only that pod (see :func:`.owner.delete`)."""
    now = names[: deletes_now(ctx, key, len(names))]
    known = uids or {}
    await run_all(*(delete(ctx, PODS, namespace, name, uid=known.get(name)) for name in now))
    if len(names) > len(now):
        # Deviation: the Job controller waits for the pods' delete events to sync again.
        ctx.requeue(key)
    return now
