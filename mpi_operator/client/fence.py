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
  to do so (:meth:`fresh_for`): a slow connect does not carry it past the fence;
* an admitted write has, in all, until the fence's ``margin`` (lease duration minus
  renew deadline) after leadership goes stale to be answered (:meth:`write_deadline`);
  the transport then drops the connection. A successor takes over no earlier than
  ``lease_duration`` after the last renewal was sent, which is exactly then, so a
  write stuck in the network (or queued, unread, at the API server) cannot land after
  a successor started: the API server drops a request whose connection closed before
  it was read, and cancels the handling of one that was (its context ends). Without
  the bound a write admitted just before the fence closed had its whole request
  timeout (60 s), past the 10 s margin of the defaults.

Not client-go (which has no such fence): a replica there keeps writing until its
workers notice the cancelled context.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import aiohttp

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
        self,
        renew_deadline: float,
        exempt: Iterable[str] = (),
        clock: Clock | None = None,
        *,
        margin: float = 0.0,
    ) -> None:
        """``margin``: how long after the renew deadline a successor may not yet have
        taken over (lease duration minus renew deadline); 0, the default, keeps every
        write within the leader's fresh time."""
        self.renew_deadline = renew_deadline
        self.margin = max(margin, 0.0)
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

    def write_deadline(self, method: str, path: str) -> float | None:
        """Seconds a fenced write admitted now has to be answered, in all: until the
        fence's margin after leadership goes stale; None when the fence does not judge
        the request."""
        left = self.fresh_for(method, path)
        return None if left is None else left + self.margin

    async def admit(self, method: str, path: str) -> None:
        """Returns when the request may be sent; raises :class:`FencedError` if never."""
        while not self.allows(method, path):
            if not self._leading:
                self.refused += 1
                raise FencedError(method, path)
            await self._changed.wait()


def fenced_timeout(
    timeout: aiohttp.ClientTimeout, fence: LeadershipFence, method: str, path: str
) -> aiohttp.ClientTimeout:
    """``timeout`` for a request the fence has just admitted: a fenced write gets a
    connection while leadership is fresh, and is answered (or dropped) within the
    fence's margin after it goes stale (:meth:`LeadershipFence.write_deadline`)."""
    left = fence.fresh_for(method, path)
    deadline = fence.write_deadline(method, path)
    if left is None or deadline is None:
        return timeout
    bounded = _connect_within(timeout, left)
    total = deadline if bounded.total is None else min(bounded.total, deadline)
    total = max(total, 0.001)  # aiohttp takes 0 for no limit at all
    return aiohttp.ClientTimeout(
        total=total,
        connect=bounded.connect,
        sock_read=bounded.sock_read,
        sock_connect=bounded.sock_connect,
        ceil_threshold=bounded.ceil_threshold,
    )


def _connect_within(timeout: aiohttp.ClientTimeout, seconds: float) -> aiohttp.ClientTimeout:
    """``timeout`` with getting a connection (TCP and TLS) bounded by ``seconds``."""
    seconds = max(seconds, 0.001)  # aiohttp takes 0 for no limit at all
    return aiohttp.ClientTimeout(
        total=timeout.total,
        connect=min(timeout.connect or seconds, seconds),
        sock_read=timeout.sock_read,
        sock_connect=timeout.sock_connect,
        ceil_threshold=timeout.ceil_threshold,
    )
