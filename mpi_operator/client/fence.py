"""The leadership fence: no write leaves a replica that may no longer lead.

The leader elector calls :meth:`LeadershipFence.renewed` with the time it *sent*
each successful Lease write; leadership counts as fresh for ``renew_deadline``
after that (client-go's leader gives up at its renew deadline, and a successor
may take over ``lease_duration`` after it last saw the Lease change, so the gap
between the two is the fence's margin). The transport calls :meth:`admit` just
before it sends a request:

* reads (GET) always pass, and so do writes to the paths named as exempt (the
  election's own Lease);
* any other write (POST, PUT, PATCH, DELETE) passes while leadership is fresh;
* when the renew deadline has passed but the elector is still trying to renew,
  the write waits: a renewal opens the fence again, stepping down
  (:meth:`revoke`) fails it with :class:`FencedError`;
* before leadership is won and after it is lost, writes fail at once;
* an admitted write that must open a connection has until leadership goes stale
  to do so (:meth:`fresh_for`): a slow connect does not carry it past the fence.

Not client-go (which has no such fence): a replica there keeps writing until its
workers notice the cancelled context.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from mpi_operator.client.clock import Clock, RealClock
from mpi_operator.client.errors import ApiError

READS = frozenset({"GET", "HEAD", "OPTIONS"})


class FencedError(ApiError):
    """A write refused inside the process (status 0: never sent)."""

    def __init__(self, method: str, path: str) -> None:
        message = f"not leading: {method} {path} not sent (leadership fence)"
        super().__init__(0, {"reason": "Fenced", "message": message})


class LeadershipFence:
    def __init__(
        self, renew_deadline: float, exempt: Iterable[str] = (), clock: Clock | None = None
    ) -> None:
        self.renew_deadline = renew_deadline
        self.exempt = frozenset(exempt)
        self.clock: Clock = clock or RealClock()
        self._leading = False
        self._fresh_until = float("-inf")
        self._changed = asyncio.Event()
        self.refused = 0

    def renewed(self, sent_at: float) -> None:
        """A Lease write sent at ``sent_at`` (monotonic) succeeded."""
        self._leading = True
        self._fresh_until = max(self._fresh_until, sent_at + self.renew_deadline)
        self._wake()

    def revoke(self) -> None:
        """Leadership ended (stepped down, or released)."""
        self._leading = False
        self._fresh_until = float("-inf")
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def fresh(self) -> bool:
        return self._leading and self.clock.monotonic() < self._fresh_until

    def allows(self, method: str, path: str) -> bool:
        return method in READS or path.partition("?")[0] in self.exempt or self.fresh()

    def fresh_for(self, method: str, path: str) -> float | None:
        """Seconds a fenced write admitted now has left to leave; None when the fence
        does not judge the request (a read, an exempt path)."""
        if method in READS or path.partition("?")[0] in self.exempt:
            return None
        return max(self._fresh_until - self.clock.monotonic(), 0.0)

    async def admit(self, method: str, path: str) -> None:
        """Returns when the request may be sent; raises :class:`FencedError` if never."""
        while not self.allows(method, path):
            if not self._leading:
                self.refused += 1
                raise FencedError(method, path)
            await self._changed.wait()
