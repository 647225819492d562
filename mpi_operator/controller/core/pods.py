"""Pod creation for both kinds: in slow-start batches, under creation expectations
(slow start, below), each pod created or, when it exists and is the owner's, used.
Pod deletion one request per pod, at most :data:`MAX_DELETES_PER_SYNC` in one sync.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import structlog

from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.client import PODS
from mpi_operator.client.errors import ApiError
from mpi_operator.controller.core.context import COLLECTION_RETRY_S, CoreContext
from mpi_operator.controller.core.expectations import CreationExpectations
from mpi_operator.controller.core.objects import name_of, uid_of
from mpi_operator.controller.core.owner import Owner, create_pod, delete, first_error, run_all

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


# ------------------------ slowstart ------------------------
#
# Slow-start creation of a job's pods, bounded per sync; both MPIJob kinds use it.
#
# As the Job controller's ``slowStartBatch``: the pods are created concurrently in
# growing batches, each twice the last, and creation stops after the first batch with
# an error, so a job whose pods all fail costs a few calls, not thousands. Its first
# batch is 1 pod; ours is :data:`INITIAL_BATCH` (8). As its
# ``MaxPodCreateDeletePerSync``, one sync creates at most :data:`MAX_CREATES_PER_SYNC`
# pods; the key is requeued for the rest as a continuation, behind the keys that have
# not had their turn (:meth:`~mpi_operator.client.workqueue.WorkQueue.add_continuation`),
# so a 20,000-worker job takes turns with the others instead of holding a worker (and
# the client's budget) for minutes, and a new job does not wait for its 500-pod syncs.
#
# Each name is expected (:class:`~mpi_operator.controller.core.expectations.CreationExpectations`)
# before its create is sent, as client-go raises ControllerExpectations before the calls,
# so that the informer's add event, which may come before the response, is not missed.
# A create that fails lowers the expectation again.
#
# The creates of a batch are started one per turn of the event loop
# (:func:`started_one_per_turn`): each builds its pod and encodes the request body before
# its first wait, so a batch of 256 started at once would hold the loop for all 256
# builds in a row (6.4 s for the 0.71 MB job: past the leader's renew deadline).


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


# ------------------------ pod cache ------------------------
#
# What the controllers keep of a pod in their caches: only what they read.
#
# A worker pod as the API returns it is mostly spec (containers, env, volumes, mounts)
# and container-status detail (images, IDs, timestamps) that no controller decision
# uses. At thousands of cached pods that is most of the operator's memory, so the pod
# informers store the result of :func:`slim_pod`, as client-go's TransformFunc allows.
#
# Kept: the whole metadata (minus managedFields): names, labels, annotations, owner
# references, deletion and creation timestamps, which adoption, expectations and
# indexing read. ``spec.nodeName``. From the status: phase, reason, message, start
# time, the conditions, and each container's name, state, last state, readiness and
# restart count, which the status, the failure policy and the culprit read.
#
# Pods are never written back from the cache (workers are created from the builders and
# deleted by name), so nothing dropped here can be lost on a write. Jobs are not slimmed:
# the launcher Job is updated with a PUT of the cached object.


_STATUS_KEYS = ("phase", "reason", "message", "startTime", "conditions")
_CONTAINER_KEYS = ("name", "state", "lastState", "ready", "restartCount")
_CONDITION_KEYS = ("type", "status", "reason", "message", "lastTransitionTime")


def _containers(statuses: Any) -> list[Obj]:
    return [
        {k: cs[k] for k in _CONTAINER_KEYS if k in cs}
        for cs in statuses or ()
        if isinstance(cs, dict)
    ]


def slim_pod(pod: Obj) -> Obj:
    """The cached form of ``pod`` (a new dict; the input is not modified)."""
    meta = dict(metadata_of(pod))
    meta.pop("managedFields", None)
    out: Obj = {"metadata": meta}
    spec = pod.get("spec") or {}
    out["spec"] = {"nodeName": spec["nodeName"]} if "nodeName" in spec else {}
    status = pod.get("status") or {}
    slim: Obj = {k: status[k] for k in _STATUS_KEYS if k in status}
    if "conditions" in slim:
        slim["conditions"] = [
            {k: c[k] for k in _CONDITION_KEYS if k in c}
            for c in slim["conditions"] or ()
            if isinstance(c, dict)
        ]
    for key in ("initContainerStatuses", "containerStatuses"):
        if key in status:
            slim[key] = _containers(status[key])
    out["status"] = slim
    return out


# ------------------------ pod collection ------------------------
#
# Deleting many of a job's pods in one request: a delete of the pods collection,
# selected by the job's labels (and, to keep finished pods, by ``status.phase``).
#
# Used for a finished or suspended Kubeflow job's workers, a finished T9k job's workers
# and a paused T9k job's pods. The collection is deleted only when the selector takes
# nothing but the owner's pods: every pod in the cache that it matches must be
# controlled by the owner. Otherwise, or while the API server refuses such deletes with
# Forbidden or MethodNotAllowed (the operator's role lacks ``deletecollection`` on pods),
# the pods go one request each.
#
# Deviation: the reference deletes each pod with a request of its own, so a 2,000-worker
# job's cleanup took 2,000 writes of the client's budget; this takes one.


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
