"""Requests in flight at once, handed out in turns by request flow.

The transport lets at most :data:`~mpi_operator.client.transport.REQUEST_CONNECTIONS`
requests wait for their answers at once, each after its token from the
:class:`~mpi_operator.client.ratelimit.FairTokenBucket`. An ``asyncio.Semaphore`` there
is FIFO: when the API server answers slower than ``slots / qps`` seconds, a busy job's
requests pile up at it with their tokens, and another job's first request waits
behind all of them, as if the tokens had not been fair. :class:`FairSlots` keeps the
waiting requests per flow (:func:`~mpi_operator.client.ratelimit.request_flow`) and
gives each freed slot to the next flow in round-robin order, as the token bucket does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mpi_operator.client.ratelimit import FlowQueues, current_flow


class FairSlots:
    """At most ``size`` holders at once; waiting flows take freed slots in turns."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._free = size
        # Invariant: a live waiter is queued only while no slot is free.
        self._waiting = FlowQueues()

    @asynccontextmanager
    async def slot(self, flow: str | None = None) -> AsyncIterator[None]:
        """Holds a slot for the block (``flow`` defaults to the context's)."""
        await self._acquire(current_flow() if flow is None else flow)
        try:
            yield
        finally:
            self._release()

    def queued(self) -> dict[str, int]:
        """Waiting holders, by flow."""
        return self._waiting.queued()

    async def _acquire(self, flow: str) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        turn = self._waiting.add(flow)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._release()  # handed a slot just as it was cancelled: pass it on
            raise

    def _release(self) -> None:
        if self._waiting.has_live():
            self._waiting.wake_next()
        else:
            self._free += 1
