"""The status write of either kind, and the events that go with it: what a sync
decided (:class:`Decision`) and the one write of it, which writes, skips or spaces an
MPIJob's status.

Each kind's pure status code returns a :class:`Decision`: the new status in wire
form, its events, whether it is written at all and whether it may wait, and the
kind's own update (the child writes that follow). The sync's finish
(:meth:`~.job_sync.JobSync.finish`) writes it with :func:`write_status`, the only
caller, then acts. The new status is written once, only when it differs from the
cached one; its events are emitted only after that write succeeded, so that a failed
write followed by a retry does not report twice. A write that the decision calls
spacable (:class:`Spacing`: a fan-out's progress, a state that passes by itself)
waits its turn (:class:`~.state.ProgressWrites`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from mpi_operator.api.object_model import Obj
from mpi_operator.client import Resource
from mpi_operator.controller.core.context import CoreContext
from mpi_operator.controller.core.owner import Owner


@dataclass(frozen=True, slots=True)
class Event:
    type: str
    reason: str
    message: str


def dump_status(status: BaseModel) -> Obj:
    """The status in wire form, as it is compared with the cached one and written."""
    return status.model_dump(by_alias=True, exclude_unset=True, mode="json")


#: A write that only reports a fan-out's progress: spaced, and its spacing grows.
PROGRESS = "status"
#: A write of a state that passes by itself within seconds: it waits a moment.
PASSING = "launcher"


@dataclass(frozen=True, slots=True)
class Spacing:
    """Why a changed status may wait: ``what`` is :data:`PROGRESS` or :data:`PASSING`;
    ``workers`` sizes the wait (see :class:`~.state.ProgressWrites`)."""

    what: str
    workers: int


U = TypeVar("U")


@dataclass(frozen=True, slots=True)
class Decision(Generic[U]):
    """What one sync decided, as each kind's pure status code returns it: ``status``
    (the new status in wire form) and ``events`` to write and emit; ``write`` False
    when the status as written on an earlier sync stands (nothing is written, the
    follow-ups still run); ``spacing`` when the write may wait its turn; ``update``,
    the kind's own account of it (the child writes that follow a written status)."""

    status: Obj
    events: Sequence[Event]
    update: U
    write: bool = True
    spacing: Spacing | None = None


async def write_status(
    ctx: CoreContext,
    owner: Owner,
    resource: Resource,
    new_status: Obj,
    events: Sequence[Event],
    spacing: Spacing | None = None,
) -> bool:
    """Writes ``new_status`` when it differs from the cached one, then emits ``events``.
    A change with ``spacing`` and no events waits when its turn has not come (the key
    is requeued for it): False then, and nothing that follows the decision may act."""
    changed = new_status != (owner.obj.get("status") or {})
    progress = ctx.state.progress
    waits = spacing if changed and not events else None
    if waits is not None and progress.defer(
        waits.what, owner.key, ctx.requeue_after, waits.workers
    ):
        return False
    if changed:
        body = {**owner.obj, "status": new_status}
        written = await ctx.client.replace_status(resource, owner.namespace, owner.name, body)
        ctx.state.own_writes.wrote(owner.key, owner.obj, written)
        if spacing is not None and spacing.what == PROGRESS and not events:
            progress.wrote(PROGRESS, owner.key, spacing.workers)
        else:
            progress.reset(owner.key)
    for event in events:
        ctx.recorder.event(owner.ref, event.type, event.reason, event.message)
    return True
