"""The status write of either kind, and the events that go with it: the one place that
writes, skips or spaces an MPIJob's status.

The new status is computed in memory and written once, only when it differs from
the cached one; its events are emitted only after that write succeeded, so that a
failed write followed by a retry does not report twice. A write that the kind's pure
status code calls spacable (:class:`Spacing`: a fan-out's progress, a state that
passes by itself) waits its turn (:class:`~.state.ProgressWrites`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
