"""A busy watch stream is read in batches; a quiet one as each event comes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web
from local_http import client_to

from mpi_operator.client import kubeapi
from mpi_operator.client.kubeapi import PODS, KubeClient
from mpi_operator.client.watch_pacing import BACKLOG, paced_chunks

WINDOW = 0.05
#: A chunk of BACKLOG bytes, as the log shows it (its first 8).
BIG = "B" * 8


def names(log: list[str]) -> list[str]:
    """The chunks of an expected log, in full."""
    chunks = [entry for entry in log if entry not in ("pause", "resume")]
    return ["B" * BACKLOG if chunk == BIG else chunk for chunk in chunks]


class ScriptedBody:
    """Chunks that each take their scripted time to arrive, on a clock of its own.
    A chunk named ``END`` comes with the end of the body."""

    def __init__(self, script: list[tuple[float, bytes]], reading: Reading) -> None:
        self.script = list(script)
        self.now = 0.0
        self.reading = reading
        self.ended = False

    def clock(self) -> float:
        return self.now

    async def readany(self) -> bytes:
        assert not self.reading.paused, "read while the transport is paused"
        if not self.script:
            return b""
        waited, chunk = self.script.pop(0)
        self.now += waited
        self.ended = chunk == b"END"
        return chunk

    def is_eof(self) -> bool:
        return self.ended


class Reading:
    def __init__(self) -> None:
        self.paused = False
        self.log: list[str] = []
        self.has_paused = asyncio.Event()

    def pause_reading(self) -> None:
        assert not self.paused
        self.paused = True
        self.log.append("pause")
        self.has_paused.set()

    def resume_reading(self) -> None:
        assert self.paused
        self.paused = False
        self.log.append("resume")

    def is_closing(self) -> bool:
        return False


async def read_all(
    script: list[tuple[float, bytes]], window: float, *, pausable: bool = True
) -> tuple[list[str], Reading]:
    """What the reader saw, in order: each chunk and each pause."""
    reading = Reading()
    body = ScriptedBody(script, reading)
    async for chunk in paced_chunks(body, reading if pausable else None, window, body.clock):
        reading.log.append(chunk.decode()[:8])
    return reading.log, reading


@pytest.mark.parametrize(
    ("waits", "expected"),
    [
        # A quiet stream: every chunk waited longer than the window; none is held back.
        ([1.0, 0.5, 2.0], ["0", "1", "2"]),
        # A busy stream: a chunk already there, or within the window, starts a pause.
        (
            [1.0, 0.01, 0.0],
            ["0", "1", "pause", "resume", "2", "pause", "resume"],
        ),
        # Busy, then quiet again: the quiet chunk is read at once.
        ([0.0, 3.0, 0.04], ["0", "pause", "resume", "1", "2", "pause", "resume"]),
        # A backlog: a read as big as the TLS buffer does not pause, whenever it came.
        ([0.0, 0.0], [BIG, BIG]),
        # The body ended with the chunk: the connection is the pool's, never paused.
        ([1.0, 0.0], ["0", "END"]),
    ],
    ids=["quiet", "busy", "busy-then-quiet", "backlog", "ended"],
)
async def test_a_chunk_that_came_within_the_window_pauses_reading(
    waits: list[float], expected: list[str]
) -> None:
    script = [(wait, name.encode()) for wait, name in zip(waits, names(expected), strict=True)]
    log, reading = await read_all(script, WINDOW)
    assert log == expected
    assert not reading.paused


@pytest.mark.parametrize(
    ("window", "pausable"), [(0.0, True), (WINDOW, False)], ids=["no-window", "no-transport"]
)
async def test_without_a_window_or_a_transport_every_chunk_is_read_as_it_comes(
    window: float, pausable: bool
) -> None:
    log, _ = await read_all([(0.0, b"a"), (0.0, b"b")], window, pausable=pausable)
    assert log == ["a", "b"]


async def test_a_reader_cancelled_in_its_pause_leaves_the_transport_reading() -> None:
    reading = Reading()
    body = ScriptedBody([(0.0, b"a"), (0.0, b"b")], reading)
    chunks = paced_chunks(body, reading, 30.0, body.clock)
    assert await anext(chunks) == b"a"
    pausing = asyncio.ensure_future(anext(chunks))
    await asyncio.wait_for(reading.has_paused.wait(), 10)
    pausing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pausing
    assert reading.log == ["pause", "resume"] and not reading.paused


class BurstServer:
    """A pod watch that sends ``count`` events, ``gap`` seconds apart, then ends."""

    def __init__(self, count: int, gap: float) -> None:
        self.count = count
        self.gap = gap

    async def watch(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        for i in range(self.count):
            obj = {"metadata": {"name": f"p{i}", "resourceVersion": str(i)}, "pad": "x" * 500}
            await resp.write(orjson.dumps({"type": "ADDED", "object": obj}) + b"\n")
            await asyncio.sleep(self.gap)
        return resp


@pytest.fixture
async def burst() -> AsyncIterator[KubeClient]:
    app = web.Application()
    app.router.add_get(PODS.path("ns"), BurstServer(count=300, gap=0.001).watch)
    async with client_to(app, lambda api: KubeClient(api, qps=-1)) as client:
        yield client


async def test_a_busy_watch_read_in_batches_loses_and_reorders_nothing(
    burst: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = 0

    async def counted(*args: Any) -> AsyncIterator[bytes]:
        nonlocal reads
        async for chunk in paced_chunks(*args):
            reads += 1
            yield chunk

    monkeypatch.setattr(kubeapi, "paced_chunks", counted)
    names: list[str] = []
    async with asyncio.timeout(30):
        async for event in burst.watch(PODS, "ns", batch_window=WINDOW):
            assert isinstance(event, dict)
            names.append(event["object"]["metadata"]["name"])
    assert names == [f"p{i}" for i in range(300)]
    # 300 events about a millisecond apart, taken 50 ms' worth at a time.
    assert reads <= 100
