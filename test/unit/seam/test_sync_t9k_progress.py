"""T9k spaces its progress writes as the Kubeflow status does: while a job's pods start,
a status that only counts more of them Pending or Running waits (a minute for a big job,
a few seconds for a small one), and the sync asks for the key again; an ending, a failed
pod or the job Running is written at once. Before, T9k wrote its status on every sync."""

from __future__ import annotations

from seam_objects import T9kJobBuilder, pod_status
from sync_fixtures import SyncWorld, t9k_world

STATUS = ("update", "mpijobs/status", "pi")
BIG = 150


async def pending(workers: int) -> SyncWorld:
    """Every pod of the job created and Pending, that status written."""
    world = t9k_world(T9kJobBuilder("pi").workers(workers).obj())
    await world.converge(rounds=20)
    for name in world.names("Pod"):
        world.change("Pod", name, {"status": pod_status("Pending")})
    await world.converge()
    return world


def start(world: SyncWorld, *indexes: int) -> None:
    for i in indexes:
        world.change("Pod", f"pi-worker-{i}", {"status": pod_status("Running", ready=True)})


async def test_a_big_jobs_progress_waits_a_minute_and_asks_for_the_key_again() -> None:
    world = await pending(BIG)
    start(world, *range(10))
    await world.sync()
    assert STATUS not in world.writes
    assert world.requeued_after == [("default/pi", 60.0)]
    world.clear()
    start(world, *range(10, 20))
    world.step(30)
    await world.sync()
    assert STATUS not in world.writes
    world.step(30)
    await world.sync()
    assert world.status["aggregate"]["running"] == 20
    assert world.status["phase"] == "Pending"


async def test_a_small_jobs_progress_waits_a_few_seconds() -> None:
    world = await pending(4)
    start(world, 0)
    await world.sync()
    assert STATUS not in world.writes
    assert world.requeued_after and all(0 < s <= 5.0 for _, s in world.requeued_after)
    world.step(5.1)
    await world.sync()
    assert world.status["aggregate"]["running"] == 1


async def test_the_job_running_is_written_at_once() -> None:
    world = await pending(BIG)
    start(world, *range(BIG))
    world.change("Pod", "pi-launcher", {"status": pod_status("Running", ready=True)})
    await world.sync()
    assert world.status["phase"] == "Running"


async def test_a_failed_pod_is_written_at_once() -> None:
    world = await pending(BIG)
    start(world, 0)
    await world.sync()
    world.clear()
    world.change("Pod", "pi-worker-3", {"status": {"phase": "Failed"}})
    await world.sync()
    assert world.status["phase"] == "Failed"
