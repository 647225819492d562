"""One sync of one MPIJob, as one value: the context, the MPIJob as cached (its
:class:`~.owner.Owner`), the parsed job and its key, built once by the kind's
``sync(key)``. The kind's steps (ensure the children, decide, act) are methods of its
subclass, and the one finish of either kind is here: the decision's status is written
(or skipped, or left to wait), then the kind acts on the written decision.

Decide, write, then act: nothing that follows a decision (a child deleted, the
launcher stopped) runs before the status that says so is written, so a write that
fails or waits leaves the evidence for the next sync, which decides the same.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import ClassVar, Generic, TypeVar

from mpi_operator.client import Resource
from mpi_operator.controller.core.context import CoreContext
from mpi_operator.controller.core.owner import Owner
from mpi_operator.controller.core.writes import Decision, write_status

C = TypeVar("C", bound=CoreContext)
J = TypeVar("J")
U = TypeVar("U")


class JobSync(Generic[C, J, U]):
    """A sync of the MPIJob ``owner`` (as cached) parsed as ``job``; the kind names its
    status ``resource`` and how it acts on a written decision (:meth:`act`)."""

    resource: ClassVar[Resource]

    def __init__(self, ctx: C, owner: Owner, job: J) -> None:
        self.ctx = ctx
        self.owner = owner
        self.job = job
        self.key = owner.key

    def finishing(self, decision: Decision[U]) -> Callable[[], Awaitable[None]]:
        """What the runner runs once the sync has returned (its ``Finish``): the
        :meth:`finish` of this decision."""
        return partial(self.finish, decision)

    async def finish(self, decision: Decision[U]) -> None:
        """The one status write of the sync (or its skip, or its wait), then the child
        writes of the written decision. A write that waits acts on nothing."""
        if decision.write and not await write_status(
            self.ctx,
            self.owner,
            self.resource,
            decision.status,
            decision.events,
            decision.spacing,
        ):
            return
        await self.act(decision.update)

    async def act(self, update: U) -> None:
        """The child writes a written decision asks for (the kind's)."""
        raise NotImplementedError
