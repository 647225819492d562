"""A sync that runs before the MPIJob cache has seen the previous sync's status write
builds on what that write returned, not on the stale cached object: its status write
carries the new resourceVersion (the stale one would be answered 409 Conflict)."""

from __future__ import annotations

import copy
import itertools

from recording_client import Action
from seam_objects import MPIJobBuilder, pod_status
from sync_fixtures import SyncWorld, kubeflow_world

Obj = dict[str, object]


def versioned(world: SyncWorld) -> None:
    """The API server's answer to a status write: the object with a new resourceVersion."""
    versions = itertools.count(2)

    def answer(action: Action) -> Obj:
        obj = copy.deepcopy(action.body)
        obj["metadata"] = {**obj["metadata"], "resourceVersion": str(next(versions))}
        return obj

    world.client.react("update", "mpijobs/status", answer)


def new_job(replicas: int = 2) -> SyncWorld:
    job = MPIJobBuilder("pi").workers(replicas).obj()
    job["metadata"]["resourceVersion"] = "1"
    world = kubeflow_world(job)
    versioned(world)
    return world


def children_seen_job_not(world: SyncWorld) -> None:
    """The caches have the children the sync created, but the MPIJob is the one from
    before its status write: the watch event of that write has not arrived yet."""
    stale = world.cached("MPIJob", "pi")
    world.settle()
    assert stale is not None
    world.add(stale)
    world.forget()


async def start_all(world: SyncWorld, replicas: int = 2) -> None:
    """The workers run; the syncs that follow write that progress (a small job's
    progress-only write waits a few seconds)."""
    for i in range(replicas):
        world.change("Pod", f"pi-worker-{i}", {"status": pod_status("Running", ready=True)})
    await world.sync()
    world.step(5.1)
    await world.sync()


def stale_rv_of_last_status_write(world: SyncWorld) -> str:
    (write,) = world.recorded("update", "mpijobs/status")
    return str(write.body["metadata"]["resourceVersion"])


async def test_the_next_status_write_builds_on_the_last_one_the_cache_has_not_seen() -> None:
    world = new_job()
    await world.sync()
    assert stale_rv_of_last_status_write(world) == "1"
    children_seen_job_not(world)
    await start_all(world)
    assert stale_rv_of_last_status_write(world) == "2"  # what the first write returned
    # The Created condition of the first write is kept, not computed again.
    assert ("Created", "True", "MPIJobCreated") in world.conditions()
    assert world.events == []


async def test_once_the_cache_has_moved_on_it_is_read_again() -> None:
    world = new_job()
    await world.sync()
    world.settle()  # the write's watch event arrived (the world's cache keeps RV "1")
    cached = world.cached("MPIJob", "pi")
    assert cached is not None
    world.change("MPIJob", "pi", {"metadata": {"resourceVersion": "7"}})
    world.forget()
    await start_all(world)
    assert stale_rv_of_last_status_write(world) == "7"
    # Kept now: what this write returned, in place of the cache's "7".
    kept = world.controller.state.own_writes.latest(world.key, world.cached("MPIJob", "pi"))
    assert kept["metadata"]["resourceVersion"] == "3"


async def test_the_delete_event_drops_what_was_kept() -> None:
    world = new_job()
    await world.sync()
    assert len(world.controller.state.own_writes) == 1
    world.job_deleted()
    assert len(world.controller.state.own_writes) == 0


async def test_a_sync_that_finds_the_job_gone_drops_what_was_kept() -> None:
    world = new_job()
    await world.sync()
    world.remove("MPIJob", "pi")
    await world.sync()
    assert len(world.controller.state.own_writes) == 0


def versioned_config_maps(world: SyncWorld, first: int) -> None:
    versions = itertools.count(first)

    def answer(action: Action) -> Obj:
        obj = copy.deepcopy(action.body)
        obj["metadata"] = {**obj["metadata"], "resourceVersion": str(next(versions))}
        return obj

    world.client.react("update", "configmaps", answer)


def config_map_writes(world: SyncWorld) -> list[str]:
    """The resourceVersion each ConfigMap update was sent with."""
    return [
        str(w.body["metadata"]["resourceVersion"]) for w in world.recorded("update", "configmaps")
    ]


async def run_worker(world: SyncWorld, i: int) -> None:
    world.change("Pod", f"pi-worker-{i}", {"status": pod_status("Running", ready=True)})
    await world.sync()
    world.step(5.1)  # a progress-only hostfile write waits a few seconds
    await world.sync()


async def test_the_next_hostfile_write_builds_on_the_last_one_the_cache_has_not_seen() -> None:
    world = new_job(replicas=2)
    await world.sync()
    world.clear()
    world.change("ConfigMap", "pi-config", {"metadata": {"resourceVersion": "10"}})
    versioned_config_maps(world, 11)
    await run_worker(world, 0)
    assert config_map_writes(world) == ["10"]
    world.forget()  # the cache still shows the ConfigMap at "10"
    await run_worker(world, 1)
    # Sent on what the first write returned (on "10" it would be answered 409 Conflict).
    assert config_map_writes(world) == ["11"]
    hosts = world.recorded("update", "configmaps")[0].body["data"]["discover_hosts.sh"]
    assert "pi-worker-0" in hosts and "pi-worker-1" in hosts
