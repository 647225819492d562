"""While a big job's workers start, progress-only writes (more hosts in discover_hosts.sh,
higher replica counts) are spaced out; the complete host set goes at once; a small job's
progress waits only a few seconds, and its complete host set goes at once too."""

from __future__ import annotations

from seam_objects import MPIJobBuilder, pod_status
from sync_fixtures import SyncWorld, kubeflow_world

CONFIG = ("update", "configmaps", "pi-config")
STATUS = ("update", "mpijobs/status", "pi")


async def fanning_out(replicas: int) -> SyncWorld:
    world = kubeflow_world(MPIJobBuilder("pi").workers(replicas).obj())
    await world.converge()
    world.clear()
    return world


def start(world: SyncWorld, *indexes: int) -> None:
    for i in indexes:
        world.change("Pod", f"pi-worker-{i}", {"status": pod_status("Running", ready=True)})


BIG = 120


async def test_a_small_job_writes_its_progress_after_a_few_seconds() -> None:
    world = await fanning_out(4)
    start(world, 0)
    await world.sync()
    assert CONFIG not in world.writes and STATUS not in world.writes
    assert world.requeued_after and all(0 < s <= 5.0 for _, s in world.requeued_after)
    world.step(5.1)
    await world.sync()
    assert CONFIG in world.writes and STATUS in world.writes


async def test_a_small_job_whose_workers_all_start_writes_them_at_once() -> None:
    world = await fanning_out(4)
    start(world, 0)
    await world.sync()
    start(world, 1, 2, 3)
    await world.sync()
    assert CONFIG in world.writes


async def test_progress_waits_and_asks_for_the_key_again() -> None:
    world = await fanning_out(BIG)
    start(world, 0)
    await world.sync()
    assert CONFIG not in world.writes and STATUS not in world.writes
    assert world.requeued_after and all(0 < s <= 60.0 for _, s in world.requeued_after)
    start(world, 1)
    world.step(60.1)
    await world.sync()
    assert CONFIG in world.writes and STATUS in world.writes


async def test_the_complete_host_set_is_written_at_once() -> None:
    world = await fanning_out(BIG)
    start(world, 0)
    await world.sync()
    assert CONFIG not in world.writes
    start(world, *range(1, BIG))
    await world.sync()
    assert CONFIG in world.writes


async def test_a_deleted_jobs_spacing_is_forgotten() -> None:
    world = await fanning_out(BIG)
    start(world, 0)
    await world.sync()
    world.step(59.0)
    world.job_deleted()
    world.forget()
    await world.sync()
    assert STATUS not in world.writes
    assert world.requeued_after and all(s > 59.0 for _, s in world.requeued_after)
