"""A sync's tail: its last writes, finished while the worker takes the next key.

The status write ends a sync, and only the job's own next sync depends on it. When
fifty new jobs arrive at once, a worker that waits for each job's status write
starts the next job's creates one round trip later, fifty times over; a job's pods
then run later by the sum of the status writes queued before it. So a sync hands
its tail to :func:`finish`: under the :class:`~mpi_operator.controller.runner.SyncRunner`
the tail runs once the sync has returned, while the worker goes on to the next key.
The key counts as being processed until its tail is done: its next sync waits for
it, as client-go's queue guarantees, and a failed tail is retried as a failed sync.

Outside a runner (a test calling ``sync`` directly) the tail runs at once, in the
sync.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

Tail = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class HandedOff:
    """A tail and the context it was handed off in (the key's request flow)."""

    tail: Tail
    context: contextvars.Context


_handed_off: contextvars.ContextVar[list[HandedOff] | None] = contextvars.ContextVar(
    "sync_tails", default=None
)


async def finish(tail: Tail) -> None:
    """Runs ``tail`` after the sync when a runner collects tails, else now."""
    collected = _handed_off.get()
    if collected is None:
        await tail()
        return
    collected.append(HandedOff(tail, contextvars.copy_context()))


@contextlib.contextmanager
def collecting() -> Iterator[list[HandedOff]]:
    """The tails the sync run inside hands off, in order."""
    collected: list[HandedOff] = []
    token = _handed_off.set(collected)
    try:
        yield collected
    finally:
        _handed_off.reset(token)


async def run(handed: HandedOff) -> None:
    """Runs a handed-off tail in the context it was handed off in; a tail that hands
    off again runs that at once."""

    async def unwrapped() -> None:
        _handed_off.set(None)
        await handed.tail()

    await asyncio.create_task(unwrapped(), context=handed.context)
