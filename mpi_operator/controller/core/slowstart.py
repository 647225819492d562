"""Slow-start creation of a job's pods, bounded per sync; both MPIJob kinds use it.

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
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from mpi_operator.api.object_model import Obj
from mpi_operator.controller.core.expectations import CreationExpectations
from mpi_operator.controller.core.parallel import first_error

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
