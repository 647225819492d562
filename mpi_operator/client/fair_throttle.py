"""The API client's throttle: client-go's QPS/burst budget, handed out by request flow.

A *flow* is the set of requests one MPIJob's sync makes (:func:`request_flow`, set by
the controller around each sync); everything else (informers' lists and watches, the
event recorder) is the *background* flow ``""``.

Deviation from client-go, whose flowcontrol limiter is one FIFO bucket per clientset
that reserves ahead without bound: there, one job's 10,000 creates make every later
request (another job's first pod, an event, a watch restart) wait 100 s at 100 qps.
Here a token is handed out only once it is there, and waiting requests queue per flow:

* A job's flow is *new* until it has taken ``burst`` tokens in its busy period (the
  time since its first request, until it has asked for nothing for
  :data:`FLOW_LINGER` seconds). New flows are served oldest first: a burst of small
  jobs is served job by job, so the first jobs' pods exist after their own writes, not
  after everyone's (round-robin turns would finish every job at about the same time,
  the last).
* Past that, a flow is *bulk*, as the background flow always is. Bulk flows take
  turns (round-robin) with each other, and get one token in :data:`BULK_SHARE` while
  new flows wait; all of them when none does. A small job's writes during a 5,000-pod
  fan-out therefore wait a token or two, whatever the fan-out's backlog, and the
  fan-out still gets its share of a stream of small jobs.

The total rate is ``qps`` with bursts of ``burst``, as in client-go.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import math
from collections import OrderedDict, deque
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

from mpi_operator.client.clock import Clock, RealClock, TimerHandle
from mpi_operator.client.ratelimit import TokenBucket

#: The flow of requests made outside any sync.
BACKGROUND = ""

#: A flow's busy period ends once it has asked for nothing for this long (a job's next
#: sync after its pods start comes 1 s after their events, by the controller's batching);
#: its next request starts a new period, behind the flows already waiting.
FLOW_LINGER = 2.0

#: While new flows wait, bulk flows get one token in this many.
BULK_SHARE = 5

#: The API client's :attr:`FairTokenBucket.tick`. A create sent alone cost about 0.6-0.7 ms
#: of CPU here against 0.4-0.5 ms for one of 5 sent together (``python -m bench.hot_path``'s
#: paced creates): each timer and socket wakeup of the event loop costs about 0.1 ms.
DISPATCH_TICK = 0.05

_FLOW: ContextVar[str] = ContextVar("mpi_operator_request_flow", default=BACKGROUND)


@contextlib.contextmanager
def request_flow(name: str) -> Iterator[None]:
    """Requests made inside (tasks started inside included) belong to flow ``name``."""
    token = _FLOW.set(name)
    try:
        yield
    finally:
        _FLOW.reset(token)


def current_flow() -> str:
    return _FLOW.get()


@dataclass(slots=True)
class _Flow:
    #: Its place among new flows: the order its busy period began in.
    seq: int
    #: Tokens it has taken in its busy period.
    taken: int = 0
    #: When it last asked for a token.
    last: float = 0.0
    waiting: deque[asyncio.Future[None]] = field(default_factory=deque)


class FairTokenBucket:
    """``qps``/``burst`` in total, new flows first, bulk flows in turns (module docstring).

    ``tick``: while requests wait, tokens are handed out at most every ``tick`` seconds,
    all those due at once (at 100 qps and a 50 ms tick, 5 requests every 50 ms instead of
    one every 10 ms). The rate is the same; each waiting request may go up to ``tick``
    later (and the timer's slack). Deviation: fewer timer and socket wakeups, each costly here (see
    :data:`DISPATCH_TICK`); 0 hands each token out the moment it is due.
    """

    def __init__(
        self, qps: float, burst: int, clock: Clock | None = None, *, tick: float = 0.0
    ) -> None:
        self._clock = clock or RealClock()
        self._bucket = TokenBucket(qps, burst, self._clock)
        self.qps, self.burst = self._bucket.qps, self._bucket.burst
        # At most half the time the bucket takes to fill all but one token: a dispatch
        # leaves up to a token's fraction, and a timer fires late by its slack; tokens
        # beyond ``burst`` would be lost (no tick with a burst of 1).
        self.tick = min(tick, (self.burst - 1) / self.qps / 2)
        # Flows in their busy period, least recently asking first.
        self._flows: OrderedDict[str, _Flow] = OrderedDict()
        self._next_seq = 0
        # The flows with requests waiting (and only those): new ones by seq, bulk in turns.
        self._new: list[tuple[int, str]] = []
        self._bulk: OrderedDict[str, None] = OrderedDict()
        self._new_in_a_row = 0
        self._timer: TimerHandle | None = None
        self._dispatched_at = -math.inf

    async def wait(self, flow: str | None = None) -> None:
        """Returns once a token is this request's (``flow`` defaults to the context's)."""
        name = current_flow() if flow is None else flow
        state = self._touch(name)
        if not self._new and not self._bulk and self._bucket.take_whole():
            state.taken += 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        state.waiting.append(turn)
        if len(state.waiting) == 1:
            if self._is_bulk(name, state):
                self._bulk[name] = None
            else:
                heapq.heappush(self._new, (state.seq, name))
        self._schedule()
        await turn  # a cancelled waiter is skipped by _dispatch

    def queued(self) -> dict[str, int]:
        """Requests waiting, by flow."""
        return {
            name: waiting
            for name, state in self._flows.items()
            if (waiting := sum(not t.done() for t in state.waiting))
        }

    def _is_bulk(self, name: str, state: _Flow) -> bool:
        return name == BACKGROUND or state.taken >= self.burst

    def _touch(self, name: str) -> _Flow:
        now = self._clock.monotonic()
        while self._flows:  # forget the flows whose busy period is over
            oldest = next(iter(self._flows.values()))
            if oldest.waiting or now - oldest.last < FLOW_LINGER:
                break
            self._flows.popitem(last=False)
        state = self._flows.get(name)
        if state is None:
            state = self._flows[name] = _Flow(seq=self._next_seq)
            self._next_seq += 1
        else:
            self._flows.move_to_end(name)
        state.last = now
        return state

    def _schedule(self) -> None:
        if self._timer is None and (self._new or self._bulk):
            delay = self._bucket.until_next()
            if self.tick > 0:
                next_tick = self._dispatched_at + self.tick - self._clock.monotonic()
                delay = max(delay, next_tick)
            self._timer = self._clock.call_later(delay, self._dispatch)

    def _dispatch(self) -> None:
        self._timer = None
        self._dispatched_at = self._clock.monotonic()
        while self._new or self._bulk:
            bulk = bool(self._bulk) and (not self._new or self._new_in_a_row >= BULK_SHARE - 1)
            name = next(iter(self._bulk)) if bulk else self._new[0][1]
            state = self._flows[name]
            while state.waiting and state.waiting[0].done():
                state.waiting.popleft()  # cancelled while waiting
            if state.waiting:
                if not self._bucket.take_whole():
                    break
                state.waiting.popleft().set_result(None)
                state.taken += 1
                self._new_in_a_row = 0 if bulk or not self._bulk else self._new_in_a_row + 1
            # Only the flow just served changes its place: the first of either kind.
            if bulk:
                del self._bulk[name]
                if state.waiting:
                    self._bulk[name] = None  # to the back of the turns
            elif not state.waiting or self._is_bulk(name, state):
                heapq.heappop(self._new)
                if state.waiting:
                    self._bulk[name] = None  # it has taken its burst: a bulk flow now
        self._schedule()
