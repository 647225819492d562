"""Pod creation and deletion for both kinds, bounded per sync.

As the Job controller's ``slowStartBatch``: the pods are created concurrently in
growing batches, each twice the last, and creation stops after the first batch with
an error, so a job whose pods all fail costs a few calls, not thousands. Its first
batch is 1 pod; ours is :data:`INITIAL_BATCH` (8). As its
``MaxPodCreateDeletePerSync``, one sync creates at most :data:`MAX_CREATES_PER_SYNC`
pods; the key is requeued for the rest as a continuation, behind the keys that have
not had their turn (:meth:`~mpi_operator.client.workqueue.WorkQueue.add_continuation`),
so a 20,000-worker job takes turns with the others instead of holding a worker (and
the client's budget) for minutes, and a new job does not wait for its 500-pod syncs.

Each name is expected (:class:`~mpi_operator.controller.core.expectations.CreationExpectations`)
before its create is sent, as client-go raises ControllerExpectations before the calls,
so that the informer's add event, which may come before the response, is not missed.
A create that fails lowers the expectation again.

The creates of a batch are started one per turn of the event loop
(:func:`started_one_per_turn`): each builds its pod and encodes the request body before
its first wait, so a batch of 256 started at once would hold the loop for all 256
builds in a row (6.4 s for the issue's 0.71 MB job: past the leader's renew deadline).

Each pod is created or, when it exists and is the owner's, used
(:func:`create_pods`). Pods are deleted one request per pod, at most
:data:`MAX_DELETES_PER_SYNC` in one sync (:func:`delete_pods`); many at once as a
collection (:mod:`~mpi_operator.controller.core.pod_collection`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial

from mpi_operator.api.object_model import Obj
from mpi_operator.client import PODS
from mpi_operator.controller.core.context import CoreContext
from mpi_operator.controller.core.expectations import CreationExpectations
from mpi_operator.controller.core.objects import slim_pod
from mpi_operator.controller.core.owner import Owner, create_pod, delete
from mpi_operator.controller.core.parallel import first_error, run_all

#: The Job controller's MaxPodCreateDeletePerSync.
MAX_CREATES_PER_SYNC = 500
#: Deviation: the Job controller's SlowStartInitialBatchSize is 1. A first batch of 8
#: creates a small job's pods in one round trip instead of up to four (1, 2, 4, 1), at
#: the cost of up to 8 calls, not 1, for a template that fails every time.
INITIAL_BATCH = 8

#: Deviation: a job with more than MAX_CREATES_PER_SYNC pods to create, on a turn that
#: is not a continuation of its last (its first, after an event or a failed sync, on
#: a new leader), creates one batch and goes on as a continuation: twenty big jobs
#: created at once then keep a new job waiting for 20 batches of 8, not 20 syncs of 500.
#: A job of up to 500 pods still creates them all in its one sync.
FIRST_TURN = INITIAL_BATCH

#: A pod to create: its name and the call that creates it (returning the pod).
PendingPod = tuple[str, Callable[[], Awaitable[Obj]]]


def batch_sizes(count: int, limit: int = MAX_CREATES_PER_SYNC) -> list[int]:
    """The batches one sync creates ``count`` missing pods in."""
    sizes: list[int] = []
    left, batch = min(count, limit), INITIAL_BATCH
    while left > 0:
        sizes.append(min(batch, left))
        left -= sizes[-1]
        batch *= 2
    return sizes


async def create_slow_start(
    expectations: CreationExpectations,
    key: str,
    pending: Sequence[PendingPod],
    requeue: Callable[[str], None] | None,
    limit: int = MAX_CREATES_PER_SYNC,
    *,
    continuing: bool = True,
) -> dict[str, Obj]:
    """Creates up to ``limit`` of ``pending`` in slow-start batches; returns the pods
    created, by name. Raises the first error of a failed batch (the pods its siblings
    created are expected); calls ``requeue(key)`` when pods are left for a later sync.

    A job with more than ``limit`` pods to create takes more than one turn anyway: on
    a turn that is not a continuation (:data:`FIRST_TURN`) it creates one batch."""
    if not continuing and len(pending) > limit and requeue is not None:
        limit = FIRST_TURN
    created: dict[str, Obj] = {}
    start = 0
    for size in batch_sizes(len(pending), limit):
        batch = pending[start : start + size]
        start += size
        expectations.expect(key, (name for name, _ in batch))
        results = await started_one_per_turn([create for _, create in batch])
        for (name, _), result in zip(batch, results, strict=True):
            if isinstance(result, BaseException):
                expectations.observed(key, name)  # the informer will not show this one
            else:
                created[name] = result
        failure = first_error(results)
        if failure is not None:
            raise failure
    if len(pending) > start and requeue is not None:
        # Deviation: the Job controller waits for the pods' add events to sync again.
        requeue(key)
    return created


async def started_one_per_turn(
    calls: Sequence[Callable[[], Awaitable[Obj]]],
) -> list[Obj | BaseException]:
    """``gather(*calls, return_exceptions=True)``, but the calls are started one per turn
    of the event loop: each runs up to its first wait before the next one starts, with
    the loop's I/O (a lease renewal, other jobs' answers) served in between."""
    tasks: list[asyncio.Future[Obj]] = []
    try:
        for call in calls:
            tasks.append(asyncio.ensure_future(call()))
            await asyncio.sleep(0)  # the new task's first step runs in the next turn
    except BaseException:
        for task in tasks:
            task.cancel()
        raise
    return await asyncio.gather(*tasks, return_exceptions=True)


#: As the Job controller's MaxPodCreateDeletePerSync, which bounds deletes too: a
#: 20,000 -> 1 scale-down held a sync worker (and the client's budget) for minutes.
MAX_DELETES_PER_SYNC = MAX_CREATES_PER_SYNC


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
