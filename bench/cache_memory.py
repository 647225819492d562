"""Memory per cached worker pod, measured with tracemalloc, without a cluster.

Run: ``python -m bench.cache_memory``. Prints one JSON line. The recorded events of a
fan-out's worker pods (:func:`bench.hot_path.fanout_stream`: ADDED, scheduled, running,
for each of ``PODS`` workers) go from the stream's bytes through the Kubeflow
controller's pod informer, as in ``bench.hot_path``; ``bytes_per_pod`` is what the
Python heap holds more once they are handled (the informer's store and indices, the
queued key), divided by the pods cached. Three transforms at the informer:

* ``as decoded``: none, the pod as the API server sent it;
* ``managedFields dropped``: every informer's default
  (:func:`~mpi_operator.client.informer.strip_managed_fields`), what the pod informers
  cached before the slim pod;
* ``slim``: :func:`~mpi_operator.controller.core.objects.slim_pod`, what they cache.
"""

from __future__ import annotations

import asyncio
import gc
import json
import tracemalloc
from typing import Any

from bench.hot_path import fanout_stream, feed_watch, recorded_job_controller, stream_chunks
from mpi_operator.client.informer import Transform, strip_managed_fields
from mpi_operator.controller.core.objects import slim_pod

PODS = 2000
TRANSFORMS: dict[str, Transform | None] = {
    "as decoded": None,
    "managedFields dropped": strip_managed_fields,
    "slim": slim_pod,
}


async def _cached_bytes(stream: bytes, transform: Transform | None) -> tuple[int, int]:
    """The heap's growth over handling ``stream``, and the pods then cached."""
    controller = recorded_job_controller()
    informer = controller.informers.pods
    informer.transform = transform
    reflector = informer.reflectors[0]
    chunks = stream_chunks(stream)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        feed_watch(reflector, chunks)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    cached = len(informer.indexer)
    controller.queue.shut_down()
    return grown, cached


def run(pods: int = PODS) -> dict[str, Any]:
    stream = fanout_stream(pods)
    per_pod: dict[str, int] = {}
    for name, transform in TRANSFORMS.items():
        grown, cached = asyncio.run(_cached_bytes(stream, transform))
        if cached != pods:
            raise RuntimeError(f"{name}: {cached} pods cached, {pods} expected")
        per_pod[name] = round(grown / cached)
    return {"benchmark": "cache_memory", "pods": pods, "bytes_per_pod": per_pod}


if __name__ == "__main__":
    print(json.dumps(run()))
