"""Deletes by name carry the uid the sync saw, as a precondition.

A delete sent late (a deposed leader's, or one sent after the pod was deleted and made
anew under the same name) would otherwise remove the successor. With the uid as a
precondition the API server refuses it with a 409 Conflict; that answer means the
object the sync meant is gone already, so it is no error.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from recording_client import ApiError, RecordingClient, conflict, forbidden
from seam_objects import MPIJobBuilder, T9kJobBuilder
from sync_fixtures import gang, kubeflow_world
from sync_fixtures import running_t9k_job as running

from mpi_operator.client import PODS
from mpi_operator.controller.core.owner import delete

LAUNCHER = "pi-launcher"


def uid_preconditions(world: object, resource: str) -> dict[str, object]:
    """The preconditions of each delete of ``resource``, by name."""
    deletes = world.recorded("delete", resource)  # type: ignore[attr-defined]
    return {a.name: a.options.get("preconditions") for a in deletes}


def cached_uid(world: object, kind: str, name: str) -> str:
    obj = world.cached(kind, name)  # type: ignore[attr-defined]
    assert obj is not None
    return str(obj["metadata"]["uid"])


async def test_a_t9k_scale_down_deletes_each_pod_on_its_uid() -> None:
    world = await running(T9kJobBuilder("pi").workers(3))
    uids = {f"pi-worker-{i}": cached_uid(world, "Pod", f"pi-worker-{i}") for i in (1, 2)}
    world.change("MPIJob", "pi", {"spec": {"worker": {"replicas": 1}}})
    await world.sync()
    assert uid_preconditions(world, "pods") == {n: {"uid": u} for n, u in uids.items()}


async def test_a_t9k_clean_up_one_by_one_deletes_each_worker_on_its_uid() -> None:
    world = await running(T9kJobBuilder("pi").workers(2).clean_up_workers("all"))
    uids = {f"pi-worker-{i}": cached_uid(world, "Pod", f"pi-worker-{i}") for i in (0, 1)}
    # One request a pod: the role lacks deletecollection on pods.
    world.client.fail("deletecollection", "pods", forbidden())
    world.change("Pod", LAUNCHER, {"status": {"phase": "Succeeded"}})
    await world.sync()
    assert uid_preconditions(world, "pods") == {n: {"uid": u} for n, u in uids.items()}


async def test_a_delete_refused_on_its_uid_is_not_an_error() -> None:
    """The pod of that name is another one now: nothing to do, the sync goes on."""
    world = await running(T9kJobBuilder("pi").workers(3))
    world.client.fail("delete", "pods", conflict("pi-worker-2"), name="pi-worker-2")
    world.change("MPIJob", "pi", {"spec": {"worker": {"replicas": 1}}})
    await world.sync()  # raises nothing
    assert {("delete", "pods", "pi-worker-1"), ("delete", "pods", "pi-worker-2")} <= set(
        world.writes
    )


async def test_a_conflict_on_a_delete_without_a_uid_is_still_an_error() -> None:
    """Only a refused precondition means the object is gone: a 409 to a delete sent
    without a uid is raised as before."""
    client = RecordingClient()
    client.fail("delete", "pods", conflict("p"))
    ctx = SimpleNamespace(client=client)
    with pytest.raises(ApiError):
        await delete(ctx, PODS, "default", "p")  # type: ignore[arg-type]
    await delete(ctx, PODS, "default", "p", uid="u-1")  # type: ignore[arg-type]
    assert [a.options for a in client.actions] == [{}, {"preconditions": {"uid": "u-1"}}]


async def test_a_kubeflow_pod_group_is_deleted_on_its_uid() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(1).obj(), gang_scheduling=gang("volcano"))
    await world.converge()
    uid = cached_uid(world, "PodGroup", "pi")
    world.change("MPIJob", "pi", {"spec": {"runPolicy": {"suspend": True}}})
    await world.sync()
    assert uid_preconditions(world, "podgroups") == {"pi": {"uid": uid}}
