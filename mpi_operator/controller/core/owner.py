"""The MPIJob a sync works for, and the ownership of its children.

An :class:`Owner` is built once per sync from the cached MPIJob: events refer to
it, its uid decides which children are its own, and its labels are those every
child carries (the child caches select on them). A child this MPIJob does not
control is never touched: a Warning event ``ErrResourceExists`` names it and the
sync fails (:func:`ensure_controlled`).

Our caches only hold labelled objects. An object made by an older operator (or by
the reference operator) lacks the label, so it is invisible to the cache: creating
it fails with AlreadyExists, and :func:`create_or_adopt` reads it directly and adopts
it (adds the labels) when this MPIJob controls it.

Secrets are read and adopted with the verbs the reference operator's role grants on
them (create, list, watch, update), no more: a Secret is found with a list by name
(``list`` is granted anyway, for the cache, and lets read every Secret ``get`` would)
and labelled with an update conditional on the resourceVersion read. Granting ``get``
and ``patch`` on every Secret of the cluster only for this rare path is not worth it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from inspect import isawaitable

from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.client import (
    PODS,
    SECRETS,
    WARNING,
    ApiError,
    Lister,
    Resource,
    is_already_exists,
    is_conflict,
    is_controlled_by,
    is_not_found,
)
from mpi_operator.controller.core.context import CoreContext
from mpi_operator.controller.core.objects import labels_of
from mpi_operator.controller.core.parallel import run_all

ERR_RESOURCE_EXISTS = "ErrResourceExists"
MESSAGE_RESOURCE_EXISTS = (
    'Resource "{name}" of Kind "{kind}" already exists and is not managed by MPIJob'
)


class SyncError(Exception):
    """The sync could not finish; the key is retried with backoff."""


@dataclass(frozen=True, slots=True)
class Owner:
    obj: Obj
    """The MPIJob as cached."""
    ref: Obj
    """The MPIJob as events refer to it (list items may lack apiVersion and kind)."""
    uid: str
    namespace: str
    name: str
    labels: Mapping[str, str]
    """The labels every child carries: the child caches select on them."""

    @classmethod
    def of(cls, obj: Obj, api_version: str, kind: str, labels: Mapping[str, str]) -> Owner:
        meta = metadata_of(obj)
        return cls(
            obj=obj,
            ref=reference(obj, api_version, kind),
            uid=str(meta.get("uid") or ""),
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            labels=dict(labels),
        )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def controls(self, obj: Obj) -> bool:
        return is_controlled_by(obj, self.uid)

    def labelled(self, obj: Obj) -> bool:
        labels = labels_of(obj)
        return all(labels.get(k) == v for k, v in self.labels.items())

    def label(self, obj: Obj) -> Obj:
        """Adds the children's labels to ``obj`` (in place) and returns it."""
        meta = obj.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), **self.labels}
        return obj


def reference(obj: Obj, api_version: str, kind: str) -> Obj:
    """The MPIJob as events refer to it; list items may lack apiVersion and kind."""
    return {**obj, "apiVersion": api_version, "kind": kind}


def warn(ctx: CoreContext, owner: Owner, reason: str, message: str) -> None:
    ctx.recorder.event(owner.ref, WARNING, reason, message)


def resource_exists(ctx: CoreContext, owner: Owner, name: str, kind: str) -> SyncError:
    """Reports a child of that name that the MPIJob does not control; the error to raise."""
    message = MESSAGE_RESOURCE_EXISTS.format(name=name, kind=kind)
    warn(ctx, owner, ERR_RESOURCE_EXISTS, message)
    return SyncError(message)


def ensure_controlled(ctx: CoreContext, owner: Owner, obj: Obj, kind: str) -> None:
    if not owner.controls(obj):
        raise resource_exists(ctx, owner, obj["metadata"]["name"], kind)


async def create_or_adopt(
    ctx: CoreContext,
    owner: Owner,
    resource: Resource,
    desired: Obj,
    kind: str,
    failed: tuple[str, str] | None = None,
) -> Obj:
    """Creates ``desired`` with the owner's labels. When it exists already, uses it if
    the owner controls it, adding the labels it lacks (ours: it is invisible to our
    label-filtered caches without them). ``failed``: the Warning event (reason, message
    before the API server's) for any other error; ``{name}`` stands for the name."""
    created = await _create(ctx, owner, resource, desired, failed, answer=True)
    if created is not None:
        return created
    name = desired["metadata"]["name"]
    if resource == SECRETS:
        return await _adopt_secret(ctx, owner, name, kind)
    existing = await ctx.client.get(resource, owner.namespace, name)
    ensure_controlled(ctx, owner, existing, kind)
    if not owner.labelled(existing):
        patch = {"metadata": {"labels": dict(owner.labels)}}
        existing = await ctx.client.patch(resource, owner.namespace, name, patch)
    return existing


@dataclass(frozen=True, slots=True)
class Child:
    """A child a job needs one of, as its kind sees it: what the cache shows of it
    (``current``), how to build it when it is missing (``desired``, called only then;
    awaited when it is costly, as an SSH key pair) and how to bring an existing one that the
    owner controls up to date (``fix``; None: nothing of it is ever changed)."""

    resource: Resource
    current: Obj | None
    desired: Callable[[], Obj | Awaitable[Obj]]
    kind: str
    """The Kind in the ErrResourceExists message."""
    fix: Callable[[Obj], Awaitable[object]] | None = None


async def ensure(ctx: CoreContext, owner: Owner, children: Sequence[Child]) -> None:
    """Creates (or adopts) each missing child and fixes each existing one the owner
    controls, all at once (:func:`~.parallel.run_all`: each is sent in the given order
    before any answer is awaited); one the owner does not control fails the sync."""
    await run_all(*(_ensure_one(ctx, owner, child) for child in children))


async def _ensure_one(ctx: CoreContext, owner: Owner, child: Child) -> None:
    if child.current is None:
        built = child.desired()
        desired = await built if isawaitable(built) else built
        await create_or_adopt(ctx, owner, child.resource, desired, child.kind)
        return
    ensure_controlled(ctx, owner, child.current, child.kind)
    if child.fix is not None:
        await child.fix(child.current)


async def create_unless_cached(
    ctx: CoreContext, owner: Owner, resource: Resource, lister: Lister, desired: Obj
) -> Obj | None:
    """For a kind whose cache is not filtered by label, so that it holds every object of
    the kind (PodGroups, on which the role grants no get: nothing is ever adopted): the
    cached child, once known to be the owner's, else None once ``desired`` is created. A
    create that finds the name taken before the cache shows it raises, and the sync that
    retries reads it from the cache."""
    name = desired["metadata"]["name"]
    current = lister.get(owner.namespace, name)
    if current is None:
        try:
            await ctx.client.create(resource, owner.namespace, owner.label(desired))
            return None
        except ApiError as err:
            current = lister.get(owner.namespace, name)
            if not is_already_exists(err) or current is None:
                raise
    ensure_controlled(ctx, owner, current, resource.kind)
    return current


async def create_pod(
    ctx: CoreContext, owner: Owner, pod: Obj, kind: str, failed: tuple[str, str], *, answer: bool
) -> Obj:
    """Creates the ``pod``; one that exists already is used if the owner controls it (a
    pod is never relabelled). ``failed`` as for :func:`create_or_adopt`. Returns the
    pod as created, or, if not ``answer``, as sent (the answer is not decoded)."""
    created = await _create(ctx, owner, PODS, pod, failed, answer=answer)
    if created is not None:
        return created
    existing = await ctx.client.get(PODS, owner.namespace, pod["metadata"]["name"])
    ensure_controlled(ctx, owner, existing, kind)
    return existing


async def _create(
    ctx: CoreContext,
    owner: Owner,
    resource: Resource,
    desired: Obj,
    failed: tuple[str, str] | None,
    *,
    answer: bool,
) -> Obj | None:
    """The object created with the owner's labels (as sent, if not ``answer``); None
    when it exists already. Any other error is reported (``failed``) and raised."""
    labelled = owner.label(desired)
    try:
        created: Obj = await ctx.client.create(
            resource, owner.namespace, labelled, discard_answer=not answer
        )
    except ApiError as err:
        if is_already_exists(err):
            return None
        if failed is not None:
            reason, message = failed
            name = desired["metadata"]["name"]
            warn(ctx, owner, reason, message.format(name=name) + err.message)
        raise
    return created if answer else labelled


async def _adopt_secret(ctx: CoreContext, owner: Owner, name: str, kind: str) -> Obj:
    """The Secret ``name`` that a create found existing, labelled if we control it,
    through list and update only (see the module's docstring). A Secret deleted
    since the create, or changed before the update (409), fails the sync: retried."""
    found = await ctx.client.list(SECRETS, owner.namespace, field_selector=f"metadata.name={name}")
    items = found.get("items") or []
    if not items:
        raise SyncError(f"Secret {name!r} existed at create, then was gone")
    existing: Obj = items[0]
    ensure_controlled(ctx, owner, existing, kind)
    if owner.labelled(existing):
        return existing
    # List items lack apiVersion and kind; the update wants them.
    labelled = owner.label({**existing, "apiVersion": "v1", "kind": "Secret"})
    updated: Obj = await ctx.client.replace(SECRETS, owner.namespace, name, labelled)
    return updated


async def delete(
    ctx: CoreContext,
    resource: Resource,
    namespace: str,
    name: str,
    propagation: str | None = None,
    *,
    uid: str | None = None,
) -> None:
    """Deletes the object; one that is gone already is no error.

    ``uid``: the object's uid, when the caller knows which object it means. The delete
    then carries it as a precondition, so that it can only take that object, never
    another of the same name: a delete sent late (by a deposed leader, or after the
    object was deleted and made anew) would otherwise remove its successor. A 409 for
    the failed precondition means that object is gone too (the name is another's now),
    so it is no error either."""
    preconditions = {"uid": uid} if uid else None
    try:
        await ctx.client.delete(
            resource, namespace, name, propagation_policy=propagation, preconditions=preconditions
        )
    except ApiError as err:
        if not (is_not_found(err) or (preconditions is not None and is_conflict(err))):
            raise
