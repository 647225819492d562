"""The Kubeflow sync handler under RestartFailed: only the failed workers and the
launcher are replaced, the healthy workers keep running; the replacements start while
the old launcher Job goes, and the new launcher waits for it and for every worker."""

from __future__ import annotations

from recording_client import merge_patch
from seam_objects import MPIJobBuilder, PodBuilder, pod_status
from sync_fixtures import SyncWorld, conditions, fail_worker, running

STATUS = ("update", "mpijobs/status", "pi")
LAUNCHER = "pi-launcher"
LAUNCHER_POD = "pi-launcher-x7k2p"
ATTEMPT = "training.kubeflow.org/restart-attempt"
DELETING = {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}


# -- RestartFailed: replace only what failed -------------------------------------------
RESTART_FAILED = {"name": "replace", "action": "RestartFailed"}


def ready_worker(world: SyncWorld, index: int) -> None:
    world.change("Pod", f"pi-worker-{index}", {"status": pod_status("Running", ready=True)})


async def test_restart_failed_replaces_the_failed_worker_and_the_launcher_only() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2, RESTART_FAILED))
    healthy = world.cached("Pod", "pi-worker-0")
    assert healthy is not None
    fail_worker(world, 1)
    await world.sync()
    assert world.writes == [
        ("update", "configmaps", "pi-config"),  # pi-worker-1 no longer runs
        STATUS,  # the restart is written first ...
        ("delete", "pods", "pi-worker-1"),  # ... then only what failed goes
        ("delete", "jobs", LAUNCHER),
    ]
    assert world.status["restartCount"] == 1
    assert conditions(world)["Restarting"] == ("True", "MPIJobRestartingFailed")
    assert world.status["lastFailure"]["pod"] == "pi-worker-1"
    (message,) = world.event_messages("MPIJobRestartingFailed")
    assert "restart 1 of 2 (rule replace)" in message
    assert "only the failed pods and the launcher are replaced" in message
    # The old launcher and pi-worker-1 go; pi-worker-0 keeps running, same uid.
    world.settle()
    world.remove("Pod", LAUNCHER_POD)
    world.clear()
    await world.sync()
    creates = [w for w in world.writes if w[0] == "create"]
    assert creates == [("create", "pods", "pi-worker-1")]  # no launcher before all are Ready
    (created,) = world.recorded("create", "pods")
    assert created.body["metadata"]["labels"][ATTEMPT] == "1"
    assert world.cached("Pod", "pi-worker-0") == healthy
    world.clear()
    ready_worker(world, 1)
    await world.sync()
    (launcher,) = world.recorded("create", "jobs")
    assert launcher.body["metadata"]["labels"][ATTEMPT] == "1"
    assert not world.recorded("delete", "pods")
    world.clear()
    # The new launcher runs: Running again, and the healthy worker of attempt 0 stays.
    new_launcher = world.cached("Job", LAUNCHER)
    assert new_launcher is not None
    world.add(PodBuilder.of_job(new_launcher, "n3w").running().obj())
    await world.sync()
    assert conditions(world)["Running"] == ("True", "MPIJobRunning")
    assert "Restarting" not in conditions(world)
    world.clear()
    await world.sync()
    assert not world.recorded("delete", "pods")
    assert world.cached("Pod", "pi-worker-0") == healthy


async def test_a_sync_before_the_cache_shows_the_delete_does_not_send_it_again() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2, RESTART_FAILED))
    fail_worker(world, 1)
    await world.sync()
    assert ("delete", "pods", "pi-worker-1") in world.writes
    world.forget()
    # Another child's event brings the key back before the pod's delete event came.
    await world.sync()
    assert not world.recorded("delete", "pods")
    world.clear()
    # Once the cache shows it gone, its replacement (a new uid) is made.
    world.remove("Pod", "pi-worker-1")
    world.remove("Pod", LAUNCHER_POD)
    await world.sync()
    assert [a.name for a in world.recorded("create", "pods")] == ["pi-worker-1"]


async def test_restart_failed_after_mpirun_failed_replaces_only_the_launcher() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2, RESTART_FAILED))
    world.change("Pod", LAUNCHER_POD, {"status": PodBuilder("x").failed(1).obj()["status"]})
    await world.sync()
    assert [w for w in world.writes if w[0] == "delete"] == [("delete", "jobs", LAUNCHER)]
    assert conditions(world)["Restarting"] == ("True", "MPIJobRestartingFailed")
    world.settle()
    world.remove("Pod", LAUNCHER_POD)
    world.clear()
    await world.sync()
    # Both workers are Ready and kept: the new launcher goes at once.
    assert [w for w in world.writes if w[0] == "create"] == [("create", "jobs", LAUNCHER)]


async def test_a_carried_over_worker_that_fails_later_is_judged_again() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2, RESTART_FAILED))
    fail_worker(world, 1)
    await world.converge()
    world.remove("Pod", LAUNCHER_POD)
    ready_worker(world, 1)
    await world.converge()
    new_launcher = world.cached("Job", LAUNCHER)
    assert new_launcher is not None
    world.add(PodBuilder.of_job(new_launcher, "n3w").running().obj())
    await world.converge()
    fail_worker(world, 0)  # made before the restart, failing in attempt 1
    await world.sync()
    assert world.status["restartCount"] == 2
    assert world.status["lastFailure"]["pod"] == "pi-worker-0"
    assert ("delete", "pods", "pi-worker-0") in world.writes
    assert ("delete", "pods", "pi-worker-1") not in world.writes


async def test_restart_failed_past_max_restarts_fails_the_job_naming_the_pod() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(0, RESTART_FAILED))
    fail_worker(world, 1)
    await world.sync()
    assert conditions(world)["Failed"] == ("True", "ReachedMaxRestarts")
    assert world.status["lastFailure"]["pod"] == "pi-worker-1"


async def test_restart_failed_with_the_launcher_as_a_worker_restarts_everything() -> None:
    builder = MPIJobBuilder("pi").failure_policy(2, RESTART_FAILED)
    builder.spec["runLauncherAsWorker"] = True
    world = await running(builder)
    fail_worker(world, 1)
    await world.sync()
    assert conditions(world)["Restarting"] == ("True", "MPIJobRestarting")
    (message,) = world.event_messages("MPIJobRestarting")
    assert "a whole restart: the launcher runs ranks (runLauncherAsWorker)" in message
    deletes = {w for w in world.writes if w[0] == "delete"}
    assert {("delete", "pods", "pi-worker-0"), ("delete", "pods", "pi-worker-1")} <= deletes


async def restarted(world: SyncWorld) -> None:
    """pi-worker-1 failed and the restart is written; the watch then shows the failed
    worker gone and the old launcher Job still being deleted (its foreground deletion
    has removed its pod, the Job waits for the garbage collector)."""
    old_launcher = world.cached("Job", LAUNCHER)
    assert old_launcher is not None
    fail_worker(world, 1)
    await world.sync()
    assert ("delete", "jobs", LAUNCHER) in world.writes
    world.clear()  # pi-worker-1 and the launcher Job deleted ...
    world.remove("Pod", LAUNCHER_POD)
    world.add(merge_patch(old_launcher, DELETING))  # ... the Job not yet gone


async def test_replacements_start_while_the_old_launcher_job_goes() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2, RESTART_FAILED))
    await restarted(world)
    await world.sync()
    assert world.writes == [("create", "pods", "pi-worker-1")]  # no launcher while it goes
    (created,) = world.recorded("create", "pods")
    assert created.body["metadata"]["labels"][ATTEMPT] == "1"
    world.clear()
    ready_worker(world, 1)
    await world.sync()
    assert world.writes == []  # every worker Ready, but the old launcher Job is there
    world.remove("Job", LAUNCHER)
    await world.sync()
    (launcher,) = world.recorded("create", "jobs")
    assert launcher.body["metadata"]["labels"][ATTEMPT] == "1"
    assert not world.recorded("create", "pods")


async def test_no_replacement_while_the_failed_worker_is_still_going() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2, RESTART_FAILED))
    failed = world.cached("Pod", "pi-worker-1")
    assert failed is not None
    await restarted(world)
    world.add(merge_patch(failed, {**DELETING, "status": {"phase": "Failed"}}))
    await world.sync()
    assert world.writes == []  # same name: the new pod waits for the old one to go


async def test_a_whole_restart_creates_nothing_while_its_launcher_job_goes() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(2))
    await restarted(world)
    world.remove("Pod", "pi-worker-0")  # RestartJob deleted both workers
    await world.sync()
    assert world.writes == []
