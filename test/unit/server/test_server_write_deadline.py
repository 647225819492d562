"""A write the leadership fence admits at its last moment ends before a successor may
lead: its whole request (not only its connect) is bounded so that it is answered or
dropped within lease duration after the last renewal was sent, for the configured
lease duration and renew deadline. Changing either flag without the other keeps the
relation, since the bound is derived from both; this test fails if the wiring or the
transport's bound stops deriving it."""

from __future__ import annotations

import aiohttp
import pytest

from mpi_operator.client import FakeClock
from mpi_operator.client.fence import fenced_timeout
from mpi_operator.server.app import Operator
from mpi_operator.server.options import parse_args

POD_CREATE = "/api/v1/namespaces/a/pods"
REQUEST = aiohttp.ClientTimeout(total=60.0)  # the transport's request timeout


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--lease-duration=30", "--renew-deadline=20"],
        ["--lease-duration=60", "--renew-deadline=10", "--retry-period=2"],
    ],
)
def test_a_write_admitted_as_the_fence_closes_ends_before_a_successor_may_lead(
    argv: list[str],
) -> None:
    opts = parse_args(argv, environ={})
    fence = Operator(opts, environ={}).fence
    clock = FakeClock()
    fence.clock = clock
    renewal_sent = clock.monotonic()
    fence.renewed(renewal_sent)
    clock.step(opts.renew_deadline - 0.01)  # the last moment a write is admitted
    assert fence.allows("POST", POD_CREATE)
    timeout = fenced_timeout(REQUEST, fence, "POST", POD_CREATE)
    assert timeout.total is not None
    # A successor takes the Lease no earlier than lease duration after it last saw it
    # change, which is after the renewal was sent.
    assert clock.monotonic() + timeout.total <= renewal_sent + opts.lease_duration
    # ... and no earlier than needed: the margin is the write's (a big delete may take it).
    assert timeout.total >= opts.lease_duration - opts.renew_deadline
    # The connection itself is got while leadership is fresh.
    assert timeout.connect is not None and timeout.connect <= 0.011


def test_reads_and_the_lease_keep_their_timeout() -> None:
    opts = parse_args([], environ={})
    fence = Operator(opts, environ={}).fence
    fence.renewed(fence.clock.monotonic())
    assert fenced_timeout(REQUEST, fence, "GET", POD_CREATE) is REQUEST
    lease = sorted(fence.exempt)[0]
    assert fenced_timeout(REQUEST, fence, "PUT", lease) is REQUEST
