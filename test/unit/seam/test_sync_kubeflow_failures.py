"""The Kubeflow sync handler's failure paths, action by action: the failure policy
(RestartJob, FailJob, Ignore, maxRestarts), #647 (the launcher stopped and cleanPodPolicy
applied on every terminal path), the TTL of finished jobs, the workers-ready timeout and
SyncFailed events for failures that persist."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from recording_client import conflict, internal_error, invalid, merge_patch
from seam_objects import MPIJobBuilder, PodBuilder, pod_status
from sync_fixtures import (
    DELETE_WORKERS,
    REPEATS,
    SYNC_FAILED,
    SyncWorld,
    conditions,
    fail_worker,
    kubeflow_world,
    running,
)

STATUS = ("update", "mpijobs/status", "pi")
LAUNCHER = "pi-launcher"
LAUNCHER_POD = "pi-launcher-x7k2p"
STOP_LAUNCHER = ("patch", "jobs", LAUNCHER)
ATTEMPT = "training.kubeflow.org/restart-attempt"


# -- failure policy ----------------------------------------------------------------
async def test_restart_job_deletes_pods_and_launcher_but_keeps_the_shared_children() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2).clean_pod_policy("All"))
    fail_worker(world, 1)
    await world.sync()
    assert world.writes == [
        ("update", "configmaps", "pi-config"),  # pi-worker-1 no longer runs
        STATUS,  # the restart is written first ...
        ("delete", "pods", "pi-worker-0"),  # ... then the attempt's children go
        ("delete", "pods", "pi-worker-1"),
        ("delete", "jobs", LAUNCHER),
    ]
    (delete_launcher,) = world.recorded("delete", "jobs", LAUNCHER)
    assert delete_launcher.options == {
        "propagation_policy": "Foreground",
        "preconditions": {"uid": "uid-pi-launcher"},  # never a successor of the same name
    }
    assert not [w for w in world.writes if w[1] in ("services", "secrets")]
    assert not [w for w in world.writes if w[0] == "delete" and w[1] == "configmaps"]
    assert world.status["restartCount"] == 1
    assert conditions(world)["Restarting"] == ("True", "MPIJobRestarting")
    assert world.status["lastFailure"]["pod"] == "pi-worker-1"
    assert world.events == [("Warning", "MPIJobRestarting")]
    assert "restart 1 of 2" in world.event_messages("MPIJobRestarting")[0]


async def test_after_a_restart_the_new_attempt_is_created_once_the_old_is_gone() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2))
    fail_worker(world, 0)
    await world.sync()
    world.settle()  # the old pods and launcher are gone
    world.remove("Pod", LAUNCHER_POD)
    world.clear()
    await world.sync()
    assert world.writes == [
        ("update", "configmaps", "pi-config"),  # no running workers in the hostfile
        ("create", "pods", "pi-worker-0"),
        ("create", "pods", "pi-worker-1"),
        ("create", "jobs", LAUNCHER),
        STATUS,
    ]
    created = [a for a in world.client.actions if a.verb == "create"]
    assert [a.short for a in created] == [
        ("create", "pods", "pi-worker-0"),
        ("create", "pods", "pi-worker-1"),
        ("create", "jobs", LAUNCHER),
    ]
    for action in created:
        assert action.body["metadata"]["labels"][ATTEMPT] == "1", action.short
    (launcher,) = world.recorded("create", "jobs")
    assert launcher.body["spec"]["template"]["metadata"]["labels"][ATTEMPT] == "1"


@pytest.mark.parametrize(
    ("launcher_terminating", "writes"),
    [(True, []), (False, [("delete", "jobs", LAUNCHER)])],
    ids=["all-terminating", "launcher-delete-lost"],
)
async def test_while_old_children_remain_nothing_new_is_created(
    launcher_terminating: bool, writes: list[tuple[str, str, str]]
) -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2))
    old = {name: world.cached("Pod", name) for name in ("pi-worker-0", "pi-worker-1")}
    old_launcher = world.cached("Job", LAUNCHER)
    assert old_launcher is not None
    fail_worker(world, 0)
    await world.sync()
    world.clear()
    # The watch has shown the restart in the status, and the old children only as
    # being deleted (or, for the launcher, not at all: its delete was lost).
    deleting = {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}
    for pod in old.values():
        world.add(merge_patch(pod, deleting))
    world.add(merge_patch(old_launcher, deleting) if launcher_terminating else old_launcher)
    await world.sync()
    assert world.writes == writes  # terminating children are not deleted again


FAIL_ON_42 = {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
IGNORE_3 = {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}}


@pytest.mark.parametrize(
    ("policy", "reason"),
    [
        pytest.param((5, FAIL_ON_42), "PodFailurePolicy", id="fail-job-rule"),
        pytest.param((0,), "ReachedMaxRestarts", id="no-restarts-left"),
    ],
)
async def test_fail_job_writes_the_status_then_stops_the_launcher_and_cleans_up(
    policy: tuple[Any, ...], reason: str
) -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(*policy).clean_pod_policy("Running"))
    fail_worker(world, 0, exit_code=42)
    await world.sync()
    assert world.writes == [
        ("update", "configmaps", "pi-config"),
        STATUS,
        STOP_LAUNCHER,
        ("delete", "pods", "pi-worker-1"),  # Running: the failed pi-worker-0 stays
    ]
    (stop,) = world.recorded(*STOP_LAUNCHER)
    assert stop.body == {"spec": {"suspend": True}}
    assert conditions(world)["Failed"] == ("True", reason)
    assert world.events == [("Warning", reason)]
    assert world.metric("mpi_operator_jobs_failed_total") == 1


async def test_ignore_deletes_the_failed_pod_for_recreation_and_fails_nothing() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2, IGNORE_3))
    fail_worker(world, 1, exit_code=3)
    await world.sync()
    assert ("delete", "pods", "pi-worker-1") in world.writes
    assert not [w for w in world.writes if w[1] == "jobs"]
    assert world.events == [("Warning", "PodFailureIgnored")]
    assert "Failed" not in conditions(world)
    assert "restartCount" not in world.status
    world.clear()
    world.remove("Pod", "pi-worker-1")
    await world.sync()
    assert ("create", "pods", "pi-worker-1") in world.writes


async def test_an_ignored_failure_is_judged_once_while_the_cache_still_shows_the_pod() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2, IGNORE_3))
    fail_worker(world, 1, exit_code=3)
    failed = world.cached("Pod", "pi-worker-1")
    assert failed is not None
    await world.sync()
    assert world.events == [("Warning", "PodFailureIgnored")]
    world.clear()
    # The next sync runs before the informer shows the delete: nothing again.
    world.add(failed)
    await world.sync()
    assert not [w for w in world.writes if w[1] == "pods"]
    assert world.events == []
    world.remove("Pod", "pi-worker-1")
    await world.sync()
    world.settle()
    assert ("create", "pods", "pi-worker-1") in world.writes
    world.clear()
    # The pod made anew is another pod (another uid): its own failure is judged.
    world.change("Pod", "pi-worker-1", {"metadata": {"uid": "uid-pi-worker-1-again"}})
    fail_worker(world, 1, exit_code=3)
    await world.sync()
    assert ("delete", "pods", "pi-worker-1") in world.writes
    assert world.events == [("Warning", "PodFailureIgnored")]


async def test_an_ignored_pod_whose_delete_failed_is_judged_and_deleted_again() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2, IGNORE_3))
    fail_worker(world, 1, exit_code=3)
    world.client.fail("delete", "pods", internal_error(), name="pi-worker-1", times=1)
    await world.sync_error()
    world.forget()  # the delete failed: the pod is still there, as the cache says
    await world.sync()
    assert ("delete", "pods", "pi-worker-1") in world.writes
    assert world.events == [("Warning", "PodFailureIgnored")]


async def test_an_ignored_failure_is_deleted_only_once_its_status_is_written() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2, IGNORE_3))
    fail_worker(world, 1, exit_code=3)
    world.client.fail("update", "mpijobs/status", conflict("pi"), times=1)
    await world.sync_error()
    assert not world.recorded("delete", "pods")
    world.clear()
    await world.sync()
    assert world.writes.index(STATUS) < world.writes.index(("delete", "pods", "pi-worker-1"))
    assert world.events == [("Warning", "PodFailureIgnored")]


async def test_a_launcher_that_succeeded_after_a_retry_is_not_a_failure() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2))
    world.add(PodBuilder.of_job(world.cached("Job", LAUNCHER) or {}, "a0").failed().obj())
    world.change(
        "Job",
        LAUNCHER,
        {"status": {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}},
    )
    world.change("Pod", LAUNCHER_POD, {"status": {"phase": "Succeeded"}})
    await world.sync()
    assert conditions(world)["Succeeded"] == ("True", "MPIJobSucceeded")
    assert "restartCount" not in world.status


# -- #647: every terminal path stops the launcher and applies cleanPodPolicy, after
# the status that records the decision is written -----------------------------------
def evict_worker(world: SyncWorld) -> None:
    world.change("Pod", "pi-worker-0", {"status": {"phase": "Failed", "reason": "Evicted"}})


def fail_by_rule(world: SyncWorld) -> None:
    fail_worker(world, 0, exit_code=42)


def ready_timeout(world: SyncWorld) -> None:
    world.change("Pod", "pi-worker-0", {"status": pod_status("Pending")})
    world.change("MPIJob", "pi", {"status": {"conditions": None}})
    world.change("MPIJob", "pi", {"spec": {"runPolicy": {"workersReadyTimeoutSeconds": 30}}})
    world.step(31)


def rejected_new_worker(world: SyncWorld) -> None:
    world.change("MPIJob", "pi", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 3}}}})
    world.client.fail("create", "pods", invalid(), name="pi-worker-2")


def finished_earlier(world: SyncWorld) -> None:
    """The status says Failed already, but the launcher was left running."""
    job = world.cached("MPIJob", "pi")
    assert job is not None
    status = MPIJobBuilder("pi").failed().obj()["status"]
    world.change("MPIJob", "pi", {"status": {**job["status"], **status}})


def no_policy(builder: MPIJobBuilder) -> MPIJobBuilder:
    return builder


def fail_on_42(builder: MPIJobBuilder) -> MPIJobBuilder:
    return builder.failure_policy(5, FAIL_ON_42)


def no_restarts_left(builder: MPIJobBuilder) -> MPIJobBuilder:
    return builder.failure_policy(0)


def fail_any_worker(world: SyncWorld) -> None:
    fail_worker(world, 0, exit_code=1)


Policy = Callable[[MPIJobBuilder], MPIJobBuilder]

# name: (the failure policy, what ends the job, the Failed reason; None: no new status)
TERMINAL_PATHS: dict[str, tuple[Policy, Callable[[SyncWorld], None], str | None]] = {
    "evicted": (no_policy, evict_worker, "MPIJobEvicted"),
    "fail-job-rule": (fail_on_42, fail_by_rule, "PodFailurePolicy"),
    "reached-max-restarts": (no_restarts_left, fail_any_worker, "ReachedMaxRestarts"),
    "workers-ready-timeout": (no_policy, ready_timeout, "WorkersNotReady"),
    "invalid-pod-template": (no_policy, rejected_new_worker, "InvalidPodTemplate"),
    "finished-earlier": (no_policy, finished_earlier, None),
}


@pytest.mark.parametrize("path", sorted(TERMINAL_PATHS))
async def test_every_terminal_path_writes_the_status_then_stops_the_launcher_and_cleans_up(
    path: str,
) -> None:
    policy, setup, reason = TERMINAL_PATHS[path]
    world = await running(policy(MPIJobBuilder("pi").clean_pod_policy("All")))
    setup(world)
    await world.sync()
    writes = world.writes
    assert STOP_LAUNCHER in writes
    assert DELETE_WORKERS in writes
    if reason is not None:
        # Decide, write, then act: the status that says the job failed goes first.
        assert writes.index(STATUS) < writes.index(STOP_LAUNCHER) < writes.index(DELETE_WORKERS)
        assert conditions(world)["Failed"] == ("True", reason)
    world.settle()
    world.change("Job", LAUNCHER, {"spec": {"suspend": True}})
    world.clear()
    await world.sync()
    assert STOP_LAUNCHER not in world.writes  # once is enough


TERMINAL_DECISIONS = sorted(p for p, (_, _, reason) in TERMINAL_PATHS.items() if reason)


@pytest.mark.parametrize("path", TERMINAL_DECISIONS)
async def test_a_terminal_decision_survives_a_failed_status_write(path: str) -> None:
    """The write fails (a conflict): nothing is stopped or deleted, so the retry, with
    the caches as they were, decides the same; once written, the job only finishes."""
    policy, setup, reason = TERMINAL_PATHS[path]
    world = await running(policy(MPIJobBuilder("pi").clean_pod_policy("All")))
    setup(world)
    world.client.fail("update", "mpijobs/status", conflict("pi"), times=3)
    for _ in range(3):
        await world.sync_error()
        assert STOP_LAUNCHER not in world.writes
        assert DELETE_WORKERS not in world.writes
        assert not world.recorded("delete", "pods")
        world.clear()
    await world.sync()
    assert world.writes.index(STATUS) < world.writes.index(STOP_LAUNCHER)
    assert conditions(world)["Failed"] == ("True", reason)
    world.clear()
    # The caches catch up (workers gone, launcher suspended): nothing is made again.
    for _ in range(3):
        await world.sync()
        creates = [w for w in world.writes if w[0] == "create"]
        assert creates == [], creates
        assert not [a for a in world.recorded("patch", "jobs") if _resumes(a.body)]
        assert cached_conditions(world)["Failed"] == ("True", reason)
        world.clear()


def cached_conditions(world: SyncWorld) -> dict[str, tuple[str, str]]:
    job = world.cached("MPIJob", "pi")
    assert job is not None
    return {c["type"]: (c["status"], c.get("reason", "")) for c in job["status"]["conditions"]}


def _resumes(patch: Any) -> bool:
    return isinstance(patch, dict) and (patch.get("spec") or {}).get("suspend") is False


async def test_a_launcher_that_failed_itself_is_not_patched() -> None:
    world = await running(MPIJobBuilder("pi").clean_pod_policy("All"))
    world.change(
        "Job",
        LAUNCHER,
        {
            "status": {
                "conditions": [
                    {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}
                ],
                "failed": 1,
            }
        },
    )
    world.change("Pod", LAUNCHER_POD, PodBuilder("x").failed().obj())
    await world.sync()
    assert STOP_LAUNCHER not in world.writes
    assert world.writes == [STATUS, DELETE_WORKERS]  # the decision first
    assert conditions(world)["Failed"] == ("True", "BackoffLimitExceeded/")


# -- TTL ---------------------------------------------------------------------------
async def test_a_finished_job_is_deleted_when_its_ttl_is_over() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").succeeded().ttl_after_finished(60).obj())
    await world.sync()
    assert world.actions == []
    assert world.requeued_after == [("default/pi", 60.0)]
    world.clear()
    world.step(61)
    await world.sync()
    assert world.actions == [("delete", "mpijobs", "pi")]
    (delete,) = world.recorded("delete", "mpijobs")
    assert delete.options == {
        "propagation_policy": "Background",
        "preconditions": {"uid": "uid-pi"},
    }


async def test_the_launcher_ttl_policy_leaves_the_mpijob_alone() -> None:
    builder = MPIJobBuilder("pi").succeeded().ttl_after_finished(60, policy="Launcher")
    world = kubeflow_world(builder.obj())
    world.step(3600)
    await world.sync()
    assert world.actions == []
    assert world.requeued_after == []


# -- workers-ready timeout -----------------------------------------------------------
async def test_workers_not_ready_in_time_fail_the_job() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(2).workers_ready_timeout(30).obj())
    await world.converge()
    world.change("Pod", "pi-worker-1", {"status": pod_status("Running", ready=True)})
    world.step(31)
    await world.sync()
    assert conditions(world)["Failed"] == ("True", "WorkersNotReady")
    (message,) = world.event_messages("WorkersNotReady")
    assert message == "1/2 workers were not Ready within 30s: pi-worker-0"
    assert world.writes.index(STATUS) < world.writes.index(STOP_LAUNCHER)


async def test_the_ready_timeout_is_requeued_for_its_deadline() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(1).workers_ready_timeout(30).obj())
    await world.sync()
    world.settle()
    world.clear()
    world.step(10)
    await world.sync()
    assert world.requeued_after == [("default/pi", 20.0)]
    assert world.writes == []


# -- SyncFailed ----------------------------------------------------------------------
async def test_a_failure_that_persists_is_reported_on_the_job_once() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").obj())
    world.client.fail("create", "services", internal_error("etcdserver: leader changed"))
    for _ in range(REPEATS - 1):
        await world.sync_through_worker()
    assert (("Warning", SYNC_FAILED)) not in world.events
    await world.sync_through_worker()
    assert world.events.count(("Warning", SYNC_FAILED)) == 1
    (message,) = world.event_messages(SYNC_FAILED)
    assert message == "500 InternalError: etcdserver: leader changed"
    (reported,) = world.event_objects(SYNC_FAILED)
    assert reported["kind"] == "MPIJob" and reported["metadata"]["name"] == "pi"
    await world.sync_through_worker()
    assert world.events.count(("Warning", SYNC_FAILED)) == 1  # not again at once


async def test_conflicts_are_reported_only_when_they_last() -> None:
    world = await running(MPIJobBuilder("pi"))
    world.change("Pod", "pi-worker-0", {"status": pod_status("Failed")})
    world.client.fail("update", "mpijobs/status", conflict("pi"))
    for _ in range(REPEATS + 2):
        await world.sync_through_worker()
    assert ("Warning", SYNC_FAILED) not in world.events
    world.step(31)
    await world.sync_through_worker()
    assert ("Warning", SYNC_FAILED) in world.events


async def test_a_sync_that_succeeds_forgets_the_failures() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").obj())
    world.client.fail("create", "services", internal_error(), times=REPEATS - 1)
    for _ in range(REPEATS - 1):
        await world.sync_through_worker()
    await world.sync_through_worker()  # succeeds
    world.client.fail("create", "services", internal_error(), times=REPEATS - 1)
    for _ in range(REPEATS - 1):
        await world.sync_through_worker()
    assert ("Warning", SYNC_FAILED) not in world.events


# -- the culprit when the launcher Job finished in the same sync ----------------------
def oom_then_launcher_exit(world: SyncWorld) -> None:
    """A worker is OOMKilled; mpirun exits a moment later and its Job fails at once
    (backoffLimit 0): the sync sees both, the launcher Job already finished."""
    oom = PodBuilder("x").failed(137, reason="OOMKilled").obj()["status"]
    oom["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = "2026-01-01T00:00:01Z"
    world.change("Pod", "pi-worker-1", {"status": oom})
    exited = PodBuilder("x").failed(1).obj()["status"]
    exited["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = "2026-01-01T00:00:03Z"
    world.change("Pod", LAUNCHER_POD, {"status": exited})
    world.change(
        "Job",
        LAUNCHER,
        {"status": {"conditions": [{"type": "Failed", "status": "True"}], "failed": 1}},
    )


async def test_a_worker_that_failed_first_is_the_culprit_when_the_launcher_job_finished() -> None:
    world = await running(MPIJobBuilder("pi"))
    oom_then_launcher_exit(world)
    await world.sync()
    assert conditions(world)["Failed"][0] == "True"
    assert world.status["lastFailure"]["pod"] == "pi-worker-1"
    assert world.status["lastFailure"]["reason"] == "OOMKilled"
    # As the reference: no worker is counted once the launcher Job finished.
    assert world.status["replicaStatuses"]["Worker"] == {}


async def test_a_worker_rule_wins_when_the_launcher_job_finished_in_the_same_sync() -> None:
    fail_on_oom = {"action": "FailJob", "onTerminationReasons": ["OOMKilled"]}
    world = await running(MPIJobBuilder("pi").failure_policy(3, fail_on_oom))
    oom_then_launcher_exit(world)
    await world.sync()
    assert conditions(world)["Failed"] == ("True", "PodFailurePolicy")
    assert world.status["lastFailure"]["pod"] == "pi-worker-1"
    assert "restartCount" not in world.status
