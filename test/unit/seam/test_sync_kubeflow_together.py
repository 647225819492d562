"""The Kubeflow sync handler where features meet: RestartFailed beside gang scheduling
and the failure policy's other rules, a run that already succeeded, a sync that
decides the job failed, and the Ignore rule at scale."""

from __future__ import annotations

import pytest
from recording_client import merge_patch
from seam_objects import MPIJobBuilder, PodBuilder, pod_status
from sync_fixtures import SyncWorld, conditions, fail_worker, gang, kubeflow_world, running

LAUNCHER = "pi-launcher"
LAUNCHER_POD = "pi-launcher-x7k2p"
RESTART_FAILED = {"name": "replace", "action": "RestartFailed"}
FAIL_ON_42 = {
    "name": "fatal",
    "action": "FailJob",
    "onExitCodes": {"operator": "In", "values": [42]},
}
IGNORE_EVICTED = {"name": "evictions", "action": "Ignore", "onPodReasons": ["Evicted"]}
#: The seam's clock starts at T0; a failure stamped 30 s after a decision taken then.
T0 = "2026-01-01T00:00:00Z"
LATER = "2026-01-01T00:00:30Z"


def launcher_succeeded(at: str) -> dict[str, object]:
    terminated = {"exitCode": 0, "reason": "Completed", "finishedAt": at}
    container = {"name": "main", "state": {"terminated": terminated}}
    return {"phase": "Succeeded", "containerStatuses": [container]}


def failed_later(world: SyncWorld, index: int, exit_code: int) -> None:
    status = PodBuilder("x").failed(exit_code).obj()["status"]
    status["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = LATER
    world.change("Pod", f"pi-worker-{index}", {"status": status})


async def writes_until_steady(world: SyncWorld, rounds: int = 8) -> list[tuple[str, str, str]]:
    """Syncs and settles until a sync writes nothing; returns every write made."""
    made: list[tuple[str, str, str]] = []
    for _ in range(rounds):
        await world.sync()
        writes = world.writes
        world.clear()
        made += writes
        if not writes:
            return made
    raise AssertionError(f"no steady state after {rounds} syncs: {made}")


async def running_gang(builder: MPIJobBuilder, flag: str) -> SyncWorld:
    """``running`` under ``--gang-scheduling=<flag>``: the PodGroup made, workers Ready,
    the launcher pod running."""
    world = kubeflow_world(builder.workers(2).obj(), gang_scheduling=gang(flag))
    await world.converge()
    for i in range(2):
        world.change("Pod", f"pi-worker-{i}", {"status": pod_status("Running", ready=True)})
    await world.converge()
    launcher = world.cached("Job", LAUNCHER)
    assert launcher is not None
    world.add(PodBuilder.of_job(launcher, "x7k2p").running().obj())
    await world.converge()
    world.clear()
    return world


# -- RestartFailed under gang scheduling ----------------------------------------------


@pytest.mark.parametrize("flag", ["volcano", "scheduler-plugins", "workload-api"])
@pytest.mark.parametrize("first", ["launcher-pod", "failed-worker"])
async def test_a_gang_restart_makes_the_launcher_with_the_replacements(
    flag: str, first: str
) -> None:
    """The group's quorum counts the launcher (workers + 1): a restart that held the new
    launcher back until the replacement is Ready would leave the group one pod short."""
    world = await running_gang(MPIJobBuilder("pi").failure_policy(2, RESTART_FAILED), flag)
    fail_worker(world, 1)
    await world.sync()
    assert conditions(world)["Restarting"] == ("True", "MPIJobRestartingFailed")
    world.settle()
    world.clear()
    # The old launcher pod and the failed worker leave in either order.
    order = [LAUNCHER_POD, "pi-worker-1"]
    made: list[tuple[str, str, str]] = []
    for name in order if first == "launcher-pod" else reversed(order):
        if world.cached("Pod", name) is not None:
            world.remove("Pod", name)
        made += await writes_until_steady(world)
    if world.cached("Job", LAUNCHER) is not None:
        world.remove("Job", LAUNCHER)  # the foreground deletion ends
    made += await writes_until_steady(world)
    created = {(w[1], w[2]) for w in made if w[0] == "create"}
    # The replacement is not Ready (the scheduler has not placed it): the launcher is
    # made all the same, so the group has every member it counts.
    assert ("pods", "pi-worker-1") in created
    assert ("jobs", LAUNCHER) in created
    (group,) = world.names("PodGroup")
    assert group == "pi"


async def test_without_a_gang_the_restart_still_waits_for_every_worker() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2, RESTART_FAILED))
    fail_worker(world, 1)
    await world.sync()
    world.settle()
    world.clear()
    for kind, name in (("Pod", LAUNCHER_POD), ("Pod", "pi-worker-1"), ("Job", LAUNCHER)):
        if world.cached(kind, name) is not None:
            world.remove(kind, name)
    made = await writes_until_steady(world)
    assert [w for w in made if w[0] == "create"] == [("create", "pods", "pi-worker-1")]


# -- a kept worker's failure during a RestartFailed restart ---------------------------


async def restart_under_way(rules: tuple[dict[str, object], ...]) -> SyncWorld:
    """pi-worker-1 failed, the RestartFailed restart is written, and the old launcher
    Job is still going: the restart is under way, pi-worker-0 kept."""
    world = await running(MPIJobBuilder("pi").failure_policy(3, *rules))
    old_launcher = world.cached("Job", LAUNCHER)
    assert old_launcher is not None
    fail_worker(world, 1)
    await world.sync()
    assert conditions(world)["Restarting"] == ("True", "MPIJobRestartingFailed")
    world.settle()
    world.remove("Pod", LAUNCHER_POD)
    world.add(merge_patch(old_launcher, {"metadata": {"deletionTimestamp": LATER}}))
    world.step(30)
    world.clear()
    return world


async def test_a_kept_worker_failing_during_the_restart_is_judged_by_a_fail_job_rule() -> None:
    world = await restart_under_way((FAIL_ON_42, RESTART_FAILED))
    failed_later(world, 0, 42)
    await world.sync()
    assert conditions(world)["Failed"] == ("True", "PodFailurePolicy")
    assert world.status["lastFailure"]["pod"] == "pi-worker-0"
    assert world.status["lastFailure"]["exitCode"] == 42
    (message,) = world.event_messages("PodFailurePolicy")
    assert "pi-worker-0" in message
    assert world.writes[0] == ("update", "mpijobs/status", "pi")  # decided, then acted
    assert ("create", "pods", "pi-worker-1") not in world.writes


async def test_a_kept_worker_failing_during_the_restart_counts_against_max_restarts() -> None:
    world = await restart_under_way((RESTART_FAILED,))
    failed_later(world, 0, 1)
    await world.sync()
    assert world.status["restartCount"] == 2
    assert world.status["lastFailure"]["pod"] == "pi-worker-0"
    assert world.writes[0] == ("update", "mpijobs/status", "pi")
    assert ("delete", "pods", "pi-worker-0") in world.writes  # replaced after the write
    assert len(world.event_messages("MPIJobRestartingFailed")) == 1
    world.settle()
    world.clear()
    await world.sync()
    # Judged once: the next sync clears it as the second restart's, and says nothing.
    assert all(status["restartCount"] == 2 for status in world.status_writes())
    assert not world.event_messages("MPIJobRestartingFailed")


async def test_a_worker_that_failed_before_the_restart_is_replaced_not_judged_again() -> None:
    world = await restart_under_way((RESTART_FAILED,))
    fail_worker(world, 0)  # stamped T0: before the restart was decided
    await world.sync()
    assert ("delete", "pods", "pi-worker-0") in world.writes
    assert not world.status_writes()


# -- a run that already succeeded -----------------------------------------------------


@pytest.mark.parametrize("rule", [RESTART_FAILED, {"name": "whole", "action": "RestartJob"}])
async def test_a_worker_failing_after_the_launcher_pod_succeeded_restarts_nothing(
    rule: dict[str, object],
) -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2, rule))
    # mpirun exited 0; the Job controller has not marked the Job Complete yet.
    world.change("Pod", LAUNCHER_POD, {"status": launcher_succeeded(T0)})
    failed_later(world, 1, 1)  # the run's hosts going away after it ended
    await world.sync()
    assert ("delete", "jobs", LAUNCHER) not in world.writes
    assert not [w for w in world.writes if w[0] == "delete"]
    assert "Restarting" not in conditions(world)
    assert not world.event_messages("MPIJobRestartingFailed")


async def test_a_worker_that_failed_before_the_launcher_pod_succeeded_still_restarts() -> None:
    """Open MPI 5's mpirun exits 0 after losing a worker's daemon: the run did not end
    well, and the worker that failed first is its culprit."""
    world = await running(MPIJobBuilder("pi").failure_policy(2, RESTART_FAILED))
    fail_worker(world, 1)  # stamped T0
    world.change("Pod", LAUNCHER_POD, {"status": launcher_succeeded(LATER)})
    await world.sync()
    assert conditions(world)["Restarting"] == ("True", "MPIJobRestartingFailed")
    assert world.status["lastFailure"]["pod"] == "pi-worker-1"


# -- nothing is created in a sync that decides the job failed --------------------------


@pytest.mark.parametrize(
    ("rules", "fail", "reason"),
    [
        pytest.param((FAIL_ON_42,), "exit-42", "PodFailurePolicy", id="fail-job-rule"),
        pytest.param((), "evicted", "MPIJobEvicted", id="evicted-no-policy"),
    ],
)
async def test_a_sync_that_decides_failed_creates_no_missing_worker(
    rules: tuple[dict[str, object], ...], fail: str, reason: str
) -> None:
    builder = MPIJobBuilder("pi")
    if rules:
        builder.failure_policy(2, *rules)
    world = await running(builder)
    if fail == "evicted":
        world.change("Pod", "pi-worker-0", {"status": PodBuilder("x").evicted().obj()["status"]})
    else:
        fail_worker(world, 0, exit_code=42)
    world.remove("Pod", "pi-worker-1")  # gone at the same time (its node went, say)
    await world.sync()
    assert conditions(world)["Failed"][0] == "True"
    assert conditions(world)["Failed"][1] == reason
    assert not world.recorded("create", "pods")
    assert not world.recorded("create", "jobs")


# -- the Ignore rule's deletes are capped per sync -------------------------------------


async def test_ignored_failures_are_deleted_at_most_a_capped_batch_per_sync() -> None:
    count = 1200
    job = MPIJobBuilder("pi").failure_policy(2, IGNORE_EVICTED).workers(count).obj()
    workers = [PodBuilder.worker(job, i).ready().obj() for i in range(count)]
    world = kubeflow_world(job, *workers)
    await world.converge()
    world.clear()
    evicted = PodBuilder("x").evicted().obj()["status"]
    for i in range(count):
        world.change("Pod", f"pi-worker-{i}", {"status": evicted})
    await world.sync()
    deletes = world.recorded("delete", "pods")
    assert 0 < len(deletes) <= 500
    assert world.key in world.requeued
    assert "Failed" not in conditions(world)
