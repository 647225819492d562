"""CPU of the Kubeflow sync handler over a whole job's life, without a cluster.

Run: ``python -m bench.sync_cost``. Prints one JSON line: the process CPU the sync
handler takes (the syncer's ``sync`` and the finish it returns) per MPIJob of 4 workers,
over its life: children created, workers Ready, the launcher created and running,
``Running`` written, the launcher done, ``Succeeded`` written and the workers cleaned
up (8 syncs). The jobs go through the unit seam (``test/unit/seam``): the production
controller with a recording client and its caches seeded directly, no informer and no
other task. The recording client's own work (a deep copy of what it records) is inside
the figure, the same at every revision: compare runs of this script at two revisions,
not with a cluster's figures.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

SEAM = Path(__file__).resolve().parents[1] / "test" / "unit" / "seam"
JOBS = 40
ROUNDS = 5
WORKERS = 4


def _seam() -> tuple[Any, Any]:
    """The seam's fixtures module and its MPIJob builder (test code, imported by path)."""
    if str(SEAM) not in sys.path:
        sys.path.insert(0, str(SEAM))
    import seam_objects
    import sync_fixtures

    return sync_fixtures, seam_objects.MPIJobBuilder


async def _lifecycles(jobs: int, workers: int) -> tuple[float, int]:
    """CPU seconds spent in syncs over ``jobs`` job lifecycles, and the syncs made."""
    fixtures, builder = _seam()
    world_type = fixtures.SyncWorld
    untimed = world_type.sync
    spent = 0.0
    syncs = 0

    async def timed(world: Any) -> None:  # the seam's one sync, timed
        nonlocal spent, syncs
        start = time.process_time()
        await untimed(world)
        spent += time.process_time() - start
        syncs += 1

    world_type.sync = timed
    try:
        for _ in range(jobs):
            world = await fixtures.running_kubeflow_job(builder("pi"), replicas=workers)
            launcher_pod = next(n for n in world.names("Pod") if n.startswith("pi-launcher"))
            done = {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}
            world.change("Job", "pi-launcher", {"status": done})
            world.change("Pod", launcher_pod, {"status": {"phase": "Succeeded"}})
            await world.converge()
            job = world.cached("MPIJob", "pi")
            true = [c["type"] for c in job["status"]["conditions"] if c["status"] == "True"]
            if "Succeeded" not in true:
                raise AssertionError(f"the job did not succeed: {true}")
    finally:
        world_type.sync = untimed
    return spent, syncs


def run(jobs: int = JOBS, repetitions: int = ROUNDS, workers: int = WORKERS) -> dict[str, Any]:
    disabled = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        asyncio.run(_lifecycles(1, workers))  # imports and first-call caches
        rounds = []
        syncs = 0
        for _ in range(repetitions):
            spent, syncs = asyncio.run(_lifecycles(jobs, workers))
            rounds.append(spent / jobs)
    finally:
        logging.disable(disabled)
    median = statistics.median(rounds)
    return {
        "benchmark": "sync_cost",
        "jobs": jobs,
        "workers": workers,
        "syncs_per_job": round(syncs / jobs, 1),
        "cpu_ms_per_job": round(median * 1e3, 3),
        "cpu_us_per_sync": round(median / (syncs / jobs) * 1e6, 1),
        "rounds_ms": [round(r * 1e3, 3) for r in rounds],
    }


if __name__ == "__main__":
    print(json.dumps(run()))
