"""Requests in flight, by flow: at most ``size`` at once, freed slots in turns, and a
request of a new flow is not held behind a busy flow's queue, through the real
transport against a slow loopback server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from local_http import serving

from mpi_operator.client.fair_slots import FairSlots
from mpi_operator.client.lean_imports import Configuration
from mpi_operator.client.ratelimit import request_flow
from mpi_operator.client.transport import REQUEST_CONNECTIONS, ApiTransport


async def test_freed_slots_go_to_the_waiting_flows_in_turns() -> None:
    slots = FairSlots(1)
    order: list[str] = []
    release = [asyncio.Event() for _ in range(7)]

    async def hold(flow: str, i: int) -> None:
        async with slots.slot(flow):
            order.append(flow)
            await release[i].wait()

    tasks = [asyncio.create_task(hold("a", i)) for i in range(5)]
    await asyncio.sleep(0)
    tasks += [asyncio.create_task(hold("b", 5)), asyncio.create_task(hold("b", 6))]
    await asyncio.sleep(0)
    assert order == ["a"] and slots.queued() == {"a": 4, "b": 2}
    for event in release:
        event.set()
    await asyncio.gather(*tasks)
    assert order == ["a", "a", "b", "a", "b", "a", "a"]
    assert slots.queued() == {}


async def test_a_cancelled_waiter_leaves_no_slot_behind() -> None:
    slots = FairSlots(1)
    held = asyncio.Event()
    done = asyncio.Event()

    async def holder() -> None:
        async with slots.slot("a"):
            held.set()
            await done.wait()

    first = asyncio.create_task(holder())
    await held.wait()
    waiter = asyncio.create_task(slots._acquire("b"))
    await asyncio.sleep(0)
    waiter.cancel()
    done.set()
    await first
    async with asyncio.timeout(1), slots.slot("c"):
        assert slots.queued() == {}
    assert slots._free == 1


async def test_a_waiter_cancelled_as_it_is_handed_a_slot_passes_it_on() -> None:
    slots = FairSlots(1)
    first = slots.slot("a")
    await first.__aenter__()
    handed = asyncio.create_task(slots._acquire("b"))
    after = asyncio.create_task(slots._acquire("c"))
    await asyncio.sleep(0)
    await first.__aexit__(None, None, None)  # the slot goes to b's future ...
    handed.cancel()  # ... and b is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await handed
    async with asyncio.timeout(1):
        await after  # b passed it on to c
    assert slots.queued() == {} and slots._free == 0


@pytest.fixture
async def slow_server() -> AsyncIterator[str]:
    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(0.1)
        return web.json_response({"kind": "Pod"})

    app = web.Application()
    app.router.add_post("/pods", slow)
    async with serving(app) as url:
        yield url


async def test_a_new_flow_is_not_held_behind_a_busy_flows_requests(slow_server: str) -> None:
    transport = ApiTransport(Configuration(host=slow_server), qps=-1)
    busy = REQUEST_CONNECTIONS * 10  # ten rounds of the server's 0.1 s

    async def create(flow: str) -> float:
        with request_flow(flow):
            started = time.monotonic()
            await transport.request("POST", "/pods", body={})
            return time.monotonic() - started

    try:
        backlog = [asyncio.create_task(create("default/big")) for _ in range(busy)]
        await asyncio.sleep(0.05)
        small = await create("default/small")
        await asyncio.gather(*backlog)
    finally:
        await transport.close()
    # FIFO slots made it wait for the ten rounds (over 1 s); fair ones for one or two.
    assert small < 0.6, small
