"""T9k: a decision is written before it is acted on. The status that says the job ended
goes first; ``cleanUpWorkers`` deletes the pods, and a launcher waiting for a failed
worker is deleted, only once that write succeeded (in the same sync or the next). Before,
the workers went first: with ``cleanUpWorkers: all``, one refused status write and the
next sync found a job with no failed worker, created both workers again and stayed
Running for good."""

from __future__ import annotations

import copy

from recording_client import Action, conflict, forbidden, internal_error
from seam_objects import T9kJobBuilder
from sync_fixtures import DELETE_WORKERS, SyncWorld, pod_names, t9k_world
from sync_fixtures import running_t9k_job as running

from mpi_operator.api.object_model import Obj

LAUNCHER = "pi-launcher"
STATUS = ("update", "mpijobs/status", "pi")


def refused(world: SyncWorld) -> list[str]:
    """The phases of the status writes that were refused."""
    return [a.body["status"]["phase"] for a in world.recorded(*STATUS) if a.error is not None]


async def failed_worker(policy: str | bool = "all", workers: int = 2) -> SyncWorld:
    world = await running(T9kJobBuilder("pi").workers(workers).clean_up_workers(policy))
    world.change("Pod", "pi-worker-0", {"status": {"phase": "Failed"}})
    return world


async def test_a_refused_ending_deletes_nothing_and_the_next_sync_ends_the_job() -> None:
    world = await failed_worker()
    world.client.fail("update", "mpijobs/status", conflict("pi"), times=1)
    await world.sync_error()
    assert world.writes == [STATUS]  # nothing deleted
    assert refused(world) == ["Failed"]
    world.clear()
    await world.sync()
    assert pod_names(world) == []
    assert world.writes == [STATUS, DELETE_WORKERS]
    assert world.status["phase"] == "Failed"
    world.clear()
    assert world.names("Pod") == [LAUNCHER]  # a running launcher stays (mpirun ends)
    await world.converge()
    assert world.names("Pod") == [LAUNCHER]
    assert world.cached("MPIJob", "pi")["status"]["phase"] == "Failed"  # type: ignore[index]


async def test_an_ending_refused_many_times_creates_and_deletes_nothing_until_written() -> None:
    world = await failed_worker()
    world.client.fail("update", "mpijobs/status", forbidden("refused by policy"), times=5)
    for _ in range(5):
        await world.sync_error()
        world.clear()
    assert world.names("Pod") == [LAUNCHER, "pi-worker-0", "pi-worker-1"]
    await world.sync()
    assert world.writes == [STATUS, DELETE_WORKERS]
    world.clear()
    await world.converge()
    assert world.names("Pod") == [LAUNCHER]


async def test_a_status_written_but_a_clean_up_failed_is_finished_by_the_next_sync() -> None:
    world = await failed_worker()
    world.client.fail("deletecollection", "pods", internal_error(), times=1)
    await world.sync_error()
    assert world.writes == [STATUS, DELETE_WORKERS]
    world.clear()  # the status says Failed, the workers are still there
    await world.sync()
    assert pod_names(world) == []
    assert world.writes == [DELETE_WORKERS]
    world.clear()
    assert world.names("Pod") == [LAUNCHER]


async def test_a_new_controller_after_a_refused_ending_decides_the_same() -> None:
    """A crash between the decision and the write: the next process, with nothing in
    memory, finds the failed worker still there and ends the job."""
    world = await failed_worker()
    world.client.fail("update", "mpijobs/status", conflict("pi"), times=1)
    await world.sync_error()
    world.clear()
    successor = t9k_world(world.cached("MPIJob", "pi") or {})
    successor.add(*(world.cached("Pod", name) or {} for name in world.names("Pod")))
    await successor.sync()
    assert pod_names(successor) == []
    assert successor.writes[0] == STATUS
    assert successor.status["phase"] == "Failed"


async def test_unfinished_workers_also_wait_for_the_written_ending() -> None:
    world = await failed_worker("unfinished")
    world.client.fail("update", "mpijobs/status", conflict("pi"), times=1)
    await world.sync_error()
    assert world.writes == [STATUS]
    world.clear()
    await world.sync()
    assert world.writes == [STATUS, ("delete", "pods", "pi-worker-1")]


async def test_a_waiting_launcher_is_deleted_only_once_the_failure_is_written() -> None:
    world = await running(T9kJobBuilder("pi").workers(2).clean_up_workers("all"))
    world.change("Pod", LAUNCHER, {"status": {"phase": "Pending"}})  # in its init container
    world.change("Pod", "pi-worker-0", {"status": {"phase": "Failed"}})
    world.client.fail("update", "mpijobs/status", conflict("pi"), times=1)
    await world.sync_error()
    assert world.writes == [STATUS]
    world.clear()
    await world.sync()
    assert world.writes == [STATUS, DELETE_WORKERS, ("delete", "pods", LAUNCHER)]
    world.clear()
    await world.converge()
    assert world.names("Pod") == []


async def test_a_job_whose_status_says_finished_never_gets_a_pod() -> None:
    """Its pods gone (deleted by the clean-up, or by hand), nothing comes back."""
    job = T9kJobBuilder("pi").workers(2).clean_up_workers("all").phase("Failed")
    world = t9k_world(job.condition("Failed", reason="WorkerFailed").obj())
    for _ in range(3):
        await world.sync()
        assert pod_names(world) == []
        world.clear()


async def test_the_clean_up_acts_on_the_cache_as_it_is_once_the_status_is_written() -> None:
    world = await failed_worker("unfinished", workers=3)
    await world.sync()
    assert world.writes == [STATUS, DELETE_WORKERS]
    # The cache has shown one delete when the key is taken again; the other's event
    # comes while the status (one worker deleted) is written.
    world.remove("Pod", "pi-worker-1")
    world.forget()

    def the_last_delete_event_comes(action: Action) -> Obj:
        world.remove("Pod", "pi-worker-2")
        return copy.deepcopy(action.body)

    world.client.react("update", "mpijobs/status", the_last_delete_event_comes, times=1)
    await world.sync()
    assert world.writes == [STATUS]  # the gone worker is not deleted again by name
