"""T9k jobs under ``--gang-scheduling=workload-api``: the Workload API's PodGroup before
the pods, every pod in it, a job naming the t9k scheduler left to it, and the errors a
taken name or a cluster without the API give."""

from __future__ import annotations

from typing import Any

from recording_client import ApiError, already_exists
from seam_objects import ChildBuilder, T9kJobBuilder
from sync_fixtures import SyncWorld, gang, t9k_world

SHARED = [
    ("create", "services", "pi"),
    ("create", "configmaps", "pi-config"),
    ("create", "secrets", "pi-ssh"),
]
STATUS = ("update", "mpijobs/status", "pi")
PODS = [("create", "pods", name) for name in ("pi-launcher", "pi-worker-0", "pi-worker-1")]
WORKLOAD_API = "scheduling.k8s.io/v1alpha2"
TAKEN = 'Resource "pi" of Kind "PodGroup" already exists and is not managed by MPIJob'


def workload_world(*objects: dict[str, Any], job: dict[str, Any] | None = None) -> SyncWorld:
    built = job if job is not None else T9kJobBuilder("pi").workers(2).obj()
    return t9k_world(built, *objects, gang_scheduling=gang("workload-api"))


def foreign_group() -> dict[str, Any]:
    owner = T9kJobBuilder("x").obj()
    return ChildBuilder("PodGroup", "pi", api_version=WORKLOAD_API).owned_by(owner).obj()


async def test_the_gang_is_created_before_its_pods_and_every_pod_joins_it() -> None:
    world = workload_world()
    await world.sync()
    assert world.actions == [*SHARED, ("create", "podgroups", "pi"), *PODS, STATUS]
    (group,) = [a.body for a in world.recorded("create", "podgroups")]
    assert group["apiVersion"] == WORKLOAD_API
    assert group["spec"] == {"schedulingPolicy": {"gang": {"minCount": 3}}}
    assert group["metadata"]["ownerReferences"][0]["uid"] == "uid-pi"
    for pod in (a.body for a in world.recorded("create", "pods")):
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": "pi"}


async def test_a_gang_in_the_cache_is_not_written_again() -> None:
    world = workload_world()
    await world.converge()
    world.remove("Pod", "pi-worker-1")
    await world.sync()
    assert world.actions == [("create", "pods", "pi-worker-1"), STATUS]


async def test_a_job_that_names_the_t9k_scheduler_gets_no_workload_api_group() -> None:
    job = T9kJobBuilder("pi").workers(2).t9k_scheduler("gpu").obj()
    world = workload_world(job=job)
    await world.sync()
    (group,) = [a.body for a in world.recorded("create", "podgroups")]
    assert group["apiVersion"] == "scheduler.tensorstack.dev/v1beta1"
    for pod in (a.body for a in world.recorded("create", "pods")):
        assert "schedulingGroup" not in pod["spec"]


async def test_a_cached_group_of_someone_else_stops_the_pods_without_a_read() -> None:
    world = workload_world(foreign_group())
    await world.sync_error()
    assert world.actions == SHARED
    assert world.event_messages("ErrResourceExists") == [TAKEN]


async def test_a_name_taken_before_the_cache_shows_it_is_retried_from_the_cache() -> None:
    """The role grants no get on these PodGroups: a create that conflicts fails the sync,
    and the next one finds the group in the cache, never in a read."""
    world = workload_world()
    world.client.fail("create", "podgroups", already_exists("pi"), name="pi")
    await world.sync_error()
    assert world.actions[len(SHARED) :] == [("create", "podgroups", "pi")]
    world.add(foreign_group())  # the watch event arrives
    await world.sync_error()
    assert "get" not in {verb for verb, _, _ in world.actions}
    assert world.event_messages("ErrResourceExists") == [TAKEN]
    assert world.recorded("create", "pods") == []


async def test_a_cluster_without_the_api_is_named_on_the_job() -> None:
    world = workload_world()
    world.client.fail("create", "podgroups", ApiError(404, "404 page not found"))
    error = await world.sync_error()
    # A built-in API group: not served (no CRD to install), with how to enable it.
    assert "the API group scheduling.k8s.io/v1alpha2 (PodGroup) is not served" in str(error)
    assert "--runtime-config=scheduling.k8s.io/v1alpha2=true" in str(error)
    assert "CRD" not in str(error)
    assert "--gang-scheduling" in str(error)
    assert world.recorded("create", "pods") == []


async def test_volcano_and_scheduler_plugins_leave_t9k_jobs_alone() -> None:
    for flag in ("volcano", "my-coscheduler"):
        world = t9k_world(T9kJobBuilder("pi").workers(2).obj(), gang_scheduling=gang(flag))
        await world.sync()
        assert world.actions == [*SHARED, *PODS, STATUS], flag
        for pod in (a.body for a in world.recorded("create", "pods")):
            assert "schedulingGroup" not in pod["spec"]
            assert "schedulerName" not in pod["spec"]
