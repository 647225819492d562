"""The field checks of an MPIJob run once per object the cache holds: an unchanged job
keeps its errors (reported at every sync), a changed one is checked anew, whether the
change fixes it or breaks it."""

from __future__ import annotations

from seam_objects import MPIJobBuilder, T9kJobBuilder
from sync_fixtures import (
    SyncWorld,
    kubeflow_world,
    running_kubeflow_job,
    running_t9k_job,
    t9k_world,
)

INVALID = [("Warning", "ValidationError")]


async def reported_every_sync(world: SyncWorld, syncs: int = 3) -> None:
    for _ in range(syncs):
        await world.sync()
        assert world.writes == []
        assert world.events == INVALID
        world.clear()


async def test_kubeflow_an_invalid_job_is_reported_at_every_sync_until_it_is_fixed() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").launchers(2).obj())
    await reported_every_sync(world)
    world.change("MPIJob", "pi", {"spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1}}}})
    await world.sync()
    assert ("create", "pods", "pi-worker-0") in world.writes
    assert world.events == [("Normal", "MPIJobCreated")]


async def test_kubeflow_a_running_job_made_invalid_is_reported_at_its_next_sync() -> None:
    world = await running_kubeflow_job(MPIJobBuilder("pi"))
    await world.sync()  # checked valid, as the cache holds it
    assert world.events == []
    world.change("MPIJob", "pi", {"spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 2}}}})
    await reported_every_sync(world)


async def test_t9k_an_invalid_job_is_reported_at_every_sync_until_it_is_fixed() -> None:
    world = t9k_world(T9kJobBuilder("pi").no_command().obj())
    await reported_every_sync(world)
    world.change("MPIJob", "pi", {"spec": {"worker": {"cmd": ["./pi"]}}})
    await world.sync()
    assert ("create", "pods", "pi-worker-0") in world.writes
    assert world.events == [("Normal", "MPIJobInitialized")]


async def test_t9k_a_running_job_made_invalid_is_reported_at_its_next_sync() -> None:
    world = await running_t9k_job(T9kJobBuilder("pi"))
    await world.sync()
    assert world.events == []
    world.change("MPIJob", "pi", {"spec": {"worker": {"cmd": None}}})
    await reported_every_sync(world)
