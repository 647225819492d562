"""The operator's per-pod costs during a fan-out, without a cluster.

Run: ``python -m bench.hot_path``. Prints one JSON line:

* ``watch_us_per_event``: CPU per pod watch event, from the bytes of the stream to the
  key in the work queue: line splitting, JSON decoding, the reflector, the pod
  informer's transform and cache, and the Kubeflow controller's event handlers. The
  events are those of one worker pod recorded during a fan-out on the local cluster
  (``fanout_worker_events.jsonl``: ADDED, MODIFIED when scheduled, MODIFIED when
  running, with their managedFields), renamed for each of ``PODS`` workers and fed in
  64 KiB chunks, as a busy watch delivers them.
* ``create_us_per_request``: CPU of this process per pod create through
  :class:`~mpi_operator.client.kubeapi.KubeClient` with a bearer token (serialising,
  headers, aiohttp, reading and decoding the response), 32 at a time against a local
  aiohttp server in another process (plain HTTP: TLS costs the same whatever we do)
  that answers with the recorded pod.
* ``paced_create_us_per_request``: the same, 100 creates a second as a throttled
  fan-out sends them: one every 10 ms, or 5 together every 50 ms (the API client's
  dispatch tick, :data:`~mpi_operator.client.ratelimit.DISPATCH_TICK`). Each event-loop
  wakeup has a cost of its own, so fewer, fuller ones take less CPU per request.
* ``paced_watch_us_per_event``: CPU of this process per event of a pod watch through
  :meth:`~mpi_operator.client.kubeapi.KubeClient.watch` (reading, splitting, decoding;
  no handlers) when the server sends one event every 2 ms, as during a fan-out: read
  one by one, or in batches (the informers' :data:`WATCH_BATCH_WINDOW`).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import socket
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import uvloop

from mpi_operator.client.kubeapi import PODS, KubeClient, LineSplitter, _decode_line
from mpi_operator.client.watch_pacing import WATCH_BATCH_WINDOW

PODS_PER_ROUND = 2000
ROUNDS = 5
CREATES = 2000
CONCURRENCY = 32
CHUNK = 65536
#: Paced creates: how many, at what rate (the client's default qps).
PACED_CREATES = 200
PACED_QPS = 100
#: Paced watch events: how many, how far apart.
PACED_EVENTS = 600
PACED_EVENT_GAP = 0.002
EVENTS = Path(__file__).with_name("fanout_worker_events.jsonl")
JOB = "fanout"
NAMESPACE = "fanout-ours"


@dataclass(frozen=True)
class Sizes:
    """How much work each figure is measured over (the defaults: the constants above)."""

    pods_per_round: int = PODS_PER_ROUND
    rounds: int = ROUNDS
    creates: int = CREATES
    paced_creates: int = PACED_CREATES
    paced_rounds: int = 3
    paced_events: int = PACED_EVENTS


#: ``--preset smoke``: one small round of each, to check the plumbing, not the figures.
SMOKE = Sizes(
    pods_per_round=200, rounds=1, creates=200, paced_creates=50, paced_rounds=1, paced_events=100
)


def recorded_events() -> list[bytes]:
    return [line for line in EVENTS.read_bytes().splitlines() if line.strip()]


def fanout_stream(workers: int) -> bytes:
    """Every worker's three events in the order a fan-out brings them: all ADDED,
    then scheduled, then running, each pod with its own name, uid and resourceVersion."""
    templates = recorded_events()
    uid = orjson.loads(templates[0])["object"]["metadata"]["uid"]
    out: list[bytes] = []
    rv = 1000
    for template in templates:
        for i in range(workers):
            rv += 1
            line = (
                template.replace(b"fanout-worker-0", f"fanout-worker-{i}".encode())
                .replace(uid.encode(), f"{uid[:-6]}{i:06d}".encode())
                .replace(
                    b'"training.kubeflow.org/replica-index":"0"',
                    f'"training.kubeflow.org/replica-index":"{i}"'.encode(),
                )
            )
            event = orjson.loads(line)
            event["object"]["metadata"]["resourceVersion"] = str(rv)
            out.append(orjson.dumps(event))
    return b"\n".join(out) + b"\n"


def recorded_job_controller() -> Any:
    """The Kubeflow controller with its informers and handlers, never started."""
    from prometheus_client import CollectorRegistry

    from mpi_operator.controller.kubeflow.controller import MPIJobController
    from mpi_operator.controller.options import ControllerOptions

    client: Any = object()  # never used: nothing is started or synced
    controller = MPIJobController(client, ControllerOptions(), registry=CollectorRegistry())
    owner_uid = orjson.loads(recorded_events()[0])["object"]["metadata"]["ownerReferences"][0]
    controller.informers.mpijobs.indexer.add(
        {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "metadata": {"name": JOB, "namespace": NAMESPACE, "uid": owner_uid["uid"]},
        }
    )
    return controller


def stream_chunks(stream: bytes) -> list[bytes]:
    """``stream`` in CHUNK-sized pieces, as a busy watch delivers it."""
    return [stream[i : i + CHUNK] for i in range(0, len(stream), CHUNK)]


def feed_watch(reflector: Any, chunks: list[bytes]) -> None:
    """The reflector's handling of every event in ``chunks``, from their bytes on."""
    lines = LineSplitter()
    for chunk in chunks:
        for line in lines.feed(chunk):
            reflector._handle_event(_decode_line(line))


async def _watch_round(stream: bytes, pods: int) -> float:
    controller = recorded_job_controller()
    reflector = controller.informers.pods.reflectors[0]
    chunks = stream_chunks(stream)
    start = time.process_time()
    feed_watch(reflector, chunks)
    elapsed = time.process_time() - start
    assert len(controller.informers.pods.indexer) == pods
    assert controller.queue.waiting() == 1
    controller.queue.shut_down()
    return elapsed


def watch_events(sizes: Sizes = Sizes()) -> dict[str, Any]:
    stream = fanout_stream(sizes.pods_per_round)
    events = stream.count(b"\n")
    rounds = [asyncio.run(_watch_round(stream, sizes.pods_per_round)) for _ in range(sizes.rounds)]
    return {
        "watch_events": events,
        "watch_us_per_event": round(statistics.median(rounds) / events * 1e6, 1),
        "watch_rounds_s": [round(r, 4) for r in rounds],
    }


# -- pod creates ---------------------------------------------------------------


def _serve(port: int, body: bytes, paced_events: int) -> None:
    from aiohttp import web

    async def create(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=201, body=body, content_type="application/json")

    event = orjson.dumps({"type": "MODIFIED", "object": orjson.loads(body)}) + b"\n"

    async def watch(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        loop = asyncio.get_running_loop()
        due = loop.time()
        for _ in range(paced_events):
            due += PACED_EVENT_GAP
            await asyncio.sleep(max(0.0, due - loop.time()))
            await resp.write(event)
        return resp

    app = web.Application()
    app.router.add_post("/api/v1/namespaces/{ns}/pods", create)
    app.router.add_get("/api/v1/namespaces/{ns}/pods", watch)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker_pod(i: int) -> dict[str, Any]:
    pod = orjson.loads(recorded_events()[0])["object"]
    meta = pod["metadata"]
    del meta["managedFields"], meta["uid"], meta["resourceVersion"], meta["creationTimestamp"]
    meta["name"] = f"fanout-worker-{i}"
    spec = pod["spec"]
    spec["volumes"] = spec["volumes"][:1]
    spec["containers"][0]["volumeMounts"] = spec["containers"][0]["volumeMounts"][:1]
    pod.pop("status", None)
    return dict(pod)


async def _create_round(
    port: int, creates: int = CREATES, concurrency: int = CONCURRENCY, pace: float = 0.0
) -> float:
    from mpi_operator.client.credentials import Credentials, StaticSource, Token
    from mpi_operator.client.lean_imports import Configuration

    configuration = Configuration(host=f"http://127.0.0.1:{port}")
    # A bearer token through Credentials, as the operator's client has (kubeconfig token).
    credentials = Credentials(StaticSource("Bearer bench"), Token("Bearer bench"))
    client = KubeClient(configuration, qps=-1, credentials=credentials)
    async with client:
        await client.create(PODS, NAMESPACE, _worker_pod(0))  # the connection pool warms up
        bodies = [_worker_pod(i) for i in range(creates)]
        start = time.process_time()
        for at in range(0, creates, concurrency):
            batch = bodies[at : at + concurrency]
            await asyncio.gather(*(client.create(PODS, NAMESPACE, b) for b in batch))
            if pace:
                await asyncio.sleep(pace)
        return time.process_time() - start


def _paced(port: int, every: int, sizes: Sizes) -> float:
    """CPU per create when ``every`` creates go out together, 100 a second (a throttled
    fan-out at 100 qps), on the operator's event loop (uvloop)."""
    creates = sizes.paced_creates
    rounds = [
        uvloop.run(_create_round(port, creates, every, every / PACED_QPS))
        for _ in range(sizes.paced_rounds)
    ]
    return round(statistics.median(rounds) / creates * 1e6, 1)


async def _watch_stream(port: int, window: float, expected: int) -> float:
    from mpi_operator.client.lean_imports import Configuration

    client = KubeClient(Configuration(host=f"http://127.0.0.1:{port}"), qps=-1)
    async with client:
        start = time.process_time()
        events = [e async for e in client.watch(PODS, NAMESPACE, batch_window=window)]
        spent = time.process_time() - start
    assert len(events) == expected, len(events)
    return spent


def _paced_watch(port: int, sizes: Sizes) -> dict[str, float]:
    """CPU per watch event read one by one and in batches, on uvloop."""
    events = sizes.paced_events
    return {
        label: round(
            statistics.median(
                uvloop.run(_watch_stream(port, window, events)) for _ in range(sizes.paced_rounds)
            )
            / events
            * 1e6,
            1,
        )
        for label, window in (("one by one", 0.0), ("batched", WATCH_BATCH_WINDOW))
    }


def pod_creates(sizes: Sizes = Sizes()) -> dict[str, Any]:
    port = _free_port()
    response = orjson.dumps(orjson.loads(recorded_events()[0])["object"])
    server = multiprocessing.get_context("spawn").Process(
        target=_serve, args=(port, response, sizes.paced_events), daemon=True
    )
    server.start()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        rounds = [asyncio.run(_create_round(port, sizes.creates)) for _ in range(sizes.rounds)]
        paced = {
            f"{every} every {every * 1000 // PACED_QPS} ms": _paced(port, every, sizes)
            for every in (1, 5)
        }
        paced_watch = _paced_watch(port, sizes)
    finally:
        server.terminate()
        server.join(10)
    return {
        "creates": sizes.creates,
        "create_us_per_request": round(statistics.median(rounds) / sizes.creates * 1e6, 1),
        "create_rounds_s": [round(r, 4) for r in rounds],
        "paced_create_us_per_request": paced,
        "paced_watch_us_per_event": paced_watch,
    }


def run(sizes: Sizes = Sizes()) -> dict[str, Any]:
    return {"benchmark": "hot_path", **watch_events(sizes), **pod_creates(sizes)}


if __name__ == "__main__":
    print(json.dumps(run()))
