"""The Kubeflow sync handler's worker pods, action by action: creation expectations (no
duplicate creates while the cache lags) and slow-start batches up to the per-sync cap."""

from __future__ import annotations

import pytest
from recording_client import internal_error
from seam_objects import MPIJobBuilder
from sync_fixtures import MAX_CREATES_PER_SYNC, kubeflow_world, pod_names

from mpi_operator.controller.core.pods import INITIAL_BATCH


async def test_pods_in_flight_are_not_created_twice() -> None:
    """Creation expectations: the cache has not shown the created pods yet."""
    world = kubeflow_world(MPIJobBuilder("pi").workers(3).obj())
    await world.sync()
    assert pod_names(world) == ["pi-worker-0", "pi-worker-1", "pi-worker-2"]
    created = world.client.actions[:]
    world.client.clear()
    world.add(*[a.body for a in created if a.resource != "pods"])  # all but the pods
    await world.sync()
    assert pod_names(world) == []
    assert world.in_flight() == {"pi-worker-0", "pi-worker-1", "pi-worker-2"}


async def test_a_pod_in_flight_too_long_is_created_again() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(1).obj())
    await world.sync()
    world.client.clear()
    world.step(301)  # client-go's ExpectationsTimeout is 5 minutes
    await world.sync()
    assert pod_names(world) == ["pi-worker-0"]


async def test_a_pod_seen_in_the_cache_is_expected_no_more() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(2).obj())
    await world.sync()
    world.settle()
    await world.sync()
    assert world.in_flight() == set()


@pytest.mark.parametrize(
    ("replicas", "failing", "attempted"),
    [
        # Batches of 8, 16, 32, ...: creation stops after the batch with the error.
        (4, 0, 4),
        (10, 0, 8),
        (10, 7, 8),
        (10, 8, 10),
        (30, 7, 8),
        (30, 8, 24),
        (30, 23, 24),
        (30, 24, 30),
    ],
)
async def test_slow_start_stops_after_the_batch_that_failed(
    replicas: int, failing: int, attempted: int
) -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(replicas).obj())
    world.client.fail("create", "pods", internal_error(), name=f"pi-worker-{failing}")
    await world.sync_error()
    assert pod_names(world) == [f"pi-worker-{i}" for i in range(attempted)]
    assert not world.recorded("create", "jobs")
    # The batch's other pods were created and stay expected; the failed one does not.
    assert world.in_flight() == {f"pi-worker-{i}" for i in range(attempted)} - {
        f"pi-worker-{failing}"
    }


async def test_one_sync_creates_at_most_the_cap_and_requeues_for_the_rest() -> None:
    """A job with more pods than one sync creates: its first turn creates one batch
    (a new job behind it does not wait for 500 creates), each continuation up to the
    cap, until none is left."""
    replicas = INITIAL_BATCH + MAX_CREATES_PER_SYNC + 3
    world = kubeflow_world(MPIJobBuilder("pi").workers(replicas).obj())
    await world.sync()
    assert pod_names(world) == [f"pi-worker-{i}" for i in range(INITIAL_BATCH)]
    assert world.requeued == ["default/pi"]
    world.clear()
    world.controller.syncer.ctx.continuing = lambda key: True  # its next turn continues
    await world.sync()
    assert len(pod_names(world)) == MAX_CREATES_PER_SYNC
    assert world.requeued == ["default/pi"]
    world.clear()
    await world.sync()
    assert pod_names(world) == [
        f"pi-worker-{i}" for i in range(INITIAL_BATCH + MAX_CREATES_PER_SYNC, replicas)
    ]
    assert world.requeued == []


async def test_a_scale_down_deletes_at_most_the_cap_in_one_sync_and_requeues() -> None:
    """As the Job controller's MaxPodCreateDeletePerSync: a scale-down to 1 worker of
    510 surplus deletes one slow-start batch on its first turn (a new job behind it
    does not wait for 500 deletes), then at most 500 a sync, the key going back to the
    queue for the rest (before, one sync sent every delete, holding a sync worker for
    minutes at 20,000 -> 1)."""
    replicas = 1 + INITIAL_BATCH + MAX_CREATES_PER_SYNC + 2
    world = kubeflow_world(MPIJobBuilder("pi").workers(replicas).obj())
    await world.converge()
    world.change("MPIJob", "pi", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 1}}}})
    deleted: list[set[str]] = []
    for _ in range(3):
        await world.sync()
        deleted.append(
            {name for verb, kind, name in world.writes if (verb, kind) == ("delete", "pods")}
        )
        requeued = world.requeued[:]
        world.clear()  # the cache shows the deletes
        world.controller.syncer.ctx.continuing = lambda key: True  # its next turns continue
        if not requeued:
            break
    assert [len(d) for d in deleted] == [INITIAL_BATCH, MAX_CREATES_PER_SYNC, 2]
    assert set().union(*deleted) == {f"pi-worker-{i}" for i in range(1, replicas)}
    assert requeued == []
