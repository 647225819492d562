"""The Kubeflow sync handler over a job's life, action by action: running, suspend and
resume, completion with each cleanPodPolicy, and one status write per sync."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from recording_client import forbidden
from seam_objects import MPIJobBuilder, PodBuilder, pod_status
from sync_fixtures import DELETE_WORKERS, SyncWorld, kubeflow_world
from sync_fixtures import running_kubeflow_job as running

STATUS = ("update", "mpijobs/status", "pi")
LAUNCHER = "pi-launcher"


def workers(n: int, verb: str) -> list[tuple[str, str, str]]:
    return [(verb, "pods", f"pi-worker-{i}") for i in range(n)]


def suspend(world: SyncWorld, suspended: bool = True) -> None:
    world.change("MPIJob", "pi", {"spec": {"runPolicy": {"suspend": suspended}}})


def condition(world: SyncWorld, type_: str) -> tuple[str, str, str] | None:
    return next((c for c in world.conditions() if c[0] == type_), None)


async def test_a_job_whose_pods_all_run_is_written_running_once() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(2).obj())
    await world.converge()
    for i in range(2):
        world.change("Pod", f"pi-worker-{i}", {"status": pod_status("Running", ready=True)})
    launcher = world.cached("Job", LAUNCHER)
    assert launcher is not None
    world.add(PodBuilder.of_job(launcher).running().obj())
    await world.sync()
    # The hostfile script learns the running workers; then the one status write.
    assert world.writes == [("update", "configmaps", "pi-config"), STATUS]
    assert world.events == [("Normal", "MPIJobRunning")]
    assert condition(world, "Running") == ("Running", "True", "MPIJobRunning")
    assert world.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 2}}


async def test_suspending_a_running_job_suspends_the_launcher_and_deletes_the_workers() -> None:
    world = await running(MPIJobBuilder("pi"))
    suspend(world)
    await world.sync()
    assert world.writes == [("update", "jobs", LAUNCHER), DELETE_WORKERS, STATUS]
    (update,) = world.recorded("update", "jobs", LAUNCHER)
    assert update.body["spec"]["suspend"] is True
    assert world.events == [("Normal", "MPIJobSuspended")]
    assert condition(world, "Suspended") == ("Suspended", "True", "MPIJobSuspended")
    assert condition(world, "Running") == ("Running", "False", "MPIJobSuspended")


async def test_a_suspended_job_stays_quiet() -> None:
    world = await running(MPIJobBuilder("pi"))
    suspend(world)
    await world.converge()
    await world.sync()
    assert world.actions == []
    assert world.names("Pod") == ["pi-launcher-x7k2p"]


async def test_resuming_creates_the_workers_then_resumes_the_launcher() -> None:
    world = await running(MPIJobBuilder("pi"))
    suspend(world)
    await world.converge()
    world.step(60)
    suspend(world, False)
    await world.sync()
    assert world.writes == [
        *workers(2, "create"),
        # A started Job's template is immutable: startTime goes first, then the resume.
        ("update", "jobs/status", LAUNCHER),
        ("update", "jobs", LAUNCHER),
        STATUS,
    ]
    (status_update,) = world.recorded("update", "jobs/status", LAUNCHER)
    assert "startTime" not in status_update.body["status"]
    (resume,) = world.recorded("update", "jobs", LAUNCHER)
    assert resume.body["spec"]["suspend"] is False
    assert world.events == [("Normal", "MPIJobResumed")]
    assert condition(world, "Suspended") == ("Suspended", "False", "MPIJobResumed")
    assert world.status["startTime"] == "2026-01-01T00:01:00Z"


async def test_a_resumed_launcher_waits_for_ready_workers_when_told_to() -> None:
    world = await running(MPIJobBuilder("pi").wait_for_workers_ready())
    suspend(world)
    await world.converge()
    suspend(world, False)
    await world.sync()
    assert world.writes == [*workers(2, "create"), STATUS]
    world.clear()
    for i in range(2):
        world.change("Pod", f"pi-worker-{i}", {"status": pod_status("Running", ready=True)})
    await world.sync()
    assert ("update", "jobs", LAUNCHER) in world.writes


def complete_launcher(world: SyncWorld) -> None:
    world.change(
        "Job",
        LAUNCHER,
        {
            "status": {
                "conditions": [{"type": "Complete", "status": "True"}],
                "succeeded": 1,
                "completionTime": "2026-01-01T00:05:00Z",
            }
        },
    )
    world.change("Pod", "pi-launcher-x7k2p", {"status": {"phase": "Succeeded"}})


@pytest.mark.parametrize(
    ("policy", "replicas", "deletes", "left"),
    [
        ("All", 2, [DELETE_WORKERS], []),
        # pi-worker-1 finished and stays; one pod to delete goes by name.
        ("Running", 2, [("delete", "pods", "pi-worker-0")], ["pi-worker-1"]),
        ("Running", 3, [DELETE_WORKERS], ["pi-worker-1"]),
        ("None", 2, [], ["pi-worker-0", "pi-worker-1"]),
    ],
)
async def test_cleanup_on_completion_follows_the_clean_pod_policy(
    policy: str, replicas: int, deletes: list[tuple[str, str, str]], left: list[str]
) -> None:
    world = await running(MPIJobBuilder("pi").clean_pod_policy(policy), replicas)
    world.change("Pod", "pi-worker-1", {"status": {"phase": "Succeeded"}})
    complete_launcher(world)
    await world.sync()
    # The one status write, then the cleanup it records (decide, write, then act).
    assert world.writes == [STATUS, *deletes]
    assert world.events == [("Normal", "MPIJobSucceeded")]
    assert condition(world, "Succeeded") == ("Succeeded", "True", "MPIJobSucceeded")
    assert world.status["completionTime"] == "2026-01-01T00:05:00Z"
    if deletes:
        assert world.status["replicaStatuses"]["Worker"] == {}
    world.settle()
    assert [n for n in world.names("Pod") if "worker" in n] == left


async def test_the_workers_collection_is_selected_by_label_and_by_phase() -> None:
    world = await running(MPIJobBuilder("pi").clean_pod_policy("Running"), replicas=3)
    complete_launcher(world)
    await world.sync()
    (collection,) = world.recorded(*DELETE_WORKERS)
    assert collection.namespace == "default"
    assert collection.options == {
        "label_selector": "training.kubeflow.org/operator-name=mpi-operator,"
        "training.kubeflow.org/job-name=pi,training.kubeflow.org/job-role=worker",
        "field_selector": "status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown",
    }


async def test_workers_go_by_name_when_a_pod_of_theirs_is_not_the_jobs() -> None:
    world = await running(MPIJobBuilder("pi").clean_pod_policy("All"), replicas=3)
    # A pod labelled as pi's worker 5 that pi does not control: the selector would take it.
    stray = PodBuilder.worker(world.cached("MPIJob", "pi") or {}, 5).running().obj()
    stray["metadata"]["ownerReferences"] = []
    world.add(stray)
    complete_launcher(world)
    await world.sync()
    assert world.writes == [STATUS, *workers(3, "delete")]


async def test_without_the_right_to_delete_a_collection_workers_go_by_name() -> None:
    world = await running(MPIJobBuilder("pi").clean_pod_policy("All"), replicas=3)
    world.client.fail("deletecollection", "pods", forbidden("cannot deletecollection pods"))
    complete_launcher(world)
    await world.sync()
    assert world.writes == [STATUS, DELETE_WORKERS, *workers(3, "delete")]
    world.settle()
    assert world.names("Pod") == ["pi-launcher-x7k2p"]
    # Not asked again for ten minutes: the next cleanup goes by name at once (pods
    # made anew: new uids).
    job = world.cached("MPIJob", "pi") or {}
    for i in range(3):
        world.add(PodBuilder.worker(job, i).uid(f"anew-{i}").running().obj())
    world.clear()
    await world.sync()
    assert world.writes == workers(3, "delete")
    world.settle()
    for i in range(3):
        world.add(PodBuilder.worker(job, i).uid(f"again-{i}").running().obj())
    world.clear()
    world.step(600)
    await world.sync()
    assert world.writes == [DELETE_WORKERS, *workers(3, "delete")]


async def test_a_finished_job_is_cleaned_up_again_on_a_later_sync() -> None:
    """A worker pod that shows up after the cleanup goes on the next sync; no second
    status."""
    world = await running(MPIJobBuilder("pi").clean_pod_policy("All"))
    complete_launcher(world)
    await world.converge()
    job = world.cached("MPIJob", "pi") or {}
    world.add(PodBuilder.worker(job, 0).uid("uid-made-anew").running().obj())
    await world.sync()
    assert world.writes == [("delete", "pods", "pi-worker-0")]
    assert world.events == []


async def test_a_sync_before_the_cache_shows_the_cleanup_does_not_send_it_again() -> None:
    """The workers' collection was deleted, but the cache still shows them: nothing is
    sent again until the deletes are 5 minutes old (client-go's expectations timeout)."""
    world = await running(MPIJobBuilder("pi").clean_pod_policy("All"), replicas=3)
    complete_launcher(world)
    left = [world.cached("Pod", f"pi-worker-{i}") for i in range(3)]
    await world.sync()
    assert world.writes == [STATUS, DELETE_WORKERS]
    world.settle()
    for pod in left:
        world.add(pod or {})
    world.clear()
    await world.sync()
    assert world.writes == []
    world.step(301)
    await world.sync()
    assert world.writes == [DELETE_WORKERS]


async def test_scaling_down_deletes_the_surplus_workers() -> None:
    world = await running(MPIJobBuilder("pi"), replicas=3)
    world.change("MPIJob", "pi", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 1}}}})
    await world.sync()
    assert world.writes == [
        ("update", "configmaps", "pi-config"),  # the hostfile has one worker now
        ("delete", "pods", "pi-worker-1"),
        ("delete", "pods", "pi-worker-2"),
        STATUS,
    ]


async def test_a_worker_pod_that_vanished_is_created_again() -> None:
    world = await running(MPIJobBuilder("pi"))
    world.remove("Pod", "pi-worker-1")
    await world.sync()
    assert ("create", "pods", "pi-worker-1") in world.writes
    assert [w for w in world.writes if w[1] == "pods"] == [("create", "pods", "pi-worker-1")]


def nothing(world: SyncWorld) -> None:
    pass


SCENARIOS: dict[str, Callable[[SyncWorld], None]] = {
    "new": nothing,
    "suspend": suspend,
    "complete": complete_launcher,
    "worker-failed": lambda w: w.change("Pod", "pi-worker-0", {"status": {"phase": "Failed"}}),
    "worker-evicted": lambda w: w.change(
        "Pod", "pi-worker-0", {"status": {"phase": "Failed", "reason": "Evicted"}}
    ),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_status_is_written_once_per_sync(scenario: str) -> None:
    if scenario == "new":
        world = kubeflow_world(MPIJobBuilder("pi").workers(2).obj())
    else:
        world = await running(MPIJobBuilder("pi").clean_pod_policy("All"))
    SCENARIOS[scenario](world)
    await world.sync()
    assert len(world.status_writes()) == 1
    # The children are made or fixed before it; only the clean-up it records follows.
    after = world.writes[world.writes.index(STATUS) + 1 :]
    assert all(verb in ("delete", "deletecollection", "patch") for verb, _, _ in after), after
    world.clear()
    await world.sync()
    assert world.status_writes() == []  # nothing changed: nothing written


async def test_a_launcher_pod_that_ended_waits_for_its_job_to_be_marked_finished() -> None:
    """The moment between the launcher pod's end and its Job's Complete costs no write
    of its own: the Succeeded write that follows carries it."""
    world = await running(MPIJobBuilder("pi"))
    world.change("Pod", "pi-launcher-x7k2p", {"status": {"phase": "Succeeded"}})
    await world.sync()
    assert STATUS not in world.writes
    assert world.requeued_after and all(0 < s <= 5.0 for _, s in world.requeued_after)
    complete_launcher(world)
    await world.sync()
    assert world.writes[-1] == STATUS
    assert condition(world, "Succeeded") == ("Succeeded", "True", "MPIJobSucceeded")
    assert world.status["replicaStatuses"]["Launcher"] == {"succeeded": 1}


async def test_a_launcher_between_pods_is_written_when_the_moment_lasts() -> None:
    world = await running(MPIJobBuilder("pi"))
    world.change("Pod", "pi-launcher-x7k2p", {"status": {"phase": "Failed"}})
    await world.sync()
    assert STATUS not in world.writes
    assert world.requeued_after and all(0 < s <= 5.0 for _, s in world.requeued_after)
    world.step(4.9)
    await world.sync()
    assert STATUS not in world.writes
    world.step(0.2)
    await world.sync()
    assert world.writes == [STATUS]
    assert world.status["replicaStatuses"]["Launcher"] == {}
    assert condition(world, "Running") == ("Running", "True", "MPIJobRunning")


async def test_a_launcher_pod_that_failed_and_was_counted_is_written_at_once() -> None:
    world = await running(MPIJobBuilder("pi"))
    world.change("Pod", "pi-launcher-x7k2p", {"status": {"phase": "Failed"}})
    world.change("Job", LAUNCHER, {"status": {"active": 0, "failed": 1}})
    await world.sync()
    assert world.writes == [STATUS]
    assert world.status["replicaStatuses"]["Launcher"] == {"failed": 1}


async def test_a_suspended_jobs_launcher_pod_that_ended_is_written_at_once() -> None:
    world = await running(MPIJobBuilder("pi"))
    suspend(world)
    await world.converge()
    world.change("Pod", "pi-launcher-x7k2p", {"status": {"phase": "Failed"}})
    await world.sync()
    assert world.writes == [STATUS]
    assert world.status["replicaStatuses"]["Launcher"] == {}
