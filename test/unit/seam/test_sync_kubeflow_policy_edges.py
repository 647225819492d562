"""The failure policy and the workers-ready timeout where they meet the job's other
ends: activeDeadlineSeconds, a suspended job resumed while its old workers terminate,
a job that finishes while Restarting, the whole-MPIJob TTL at zero seconds and the
launcher's own TTL when the operator stopped the launcher."""

from __future__ import annotations

from seam_objects import MPIJobBuilder, PodBuilder
from sync_fixtures import SyncWorld, kubeflow_world
from sync_fixtures import running_kubeflow_job as running

LAUNCHER = "pi-launcher"
LAUNCHER_POD = "pi-launcher-x7k2p"
TERMINATING = "2026-01-01T00:00:00Z"


def conditions(world: SyncWorld) -> dict[str, tuple[str, str]]:
    return {kind: (status, reason) for kind, status, reason in world.conditions()}


def suspend(world: SyncWorld, on: bool) -> None:
    world.change("MPIJob", "pi", {"spec": {"runPolicy": {"suspend": on}}})


def terminating(pod: dict[str, object], status: dict[str, object] | None = None) -> dict:
    """``pod`` deleted and still in its grace period (``status``: how it ends)."""
    meta = dict(pod["metadata"])  # type: ignore[call-overload]
    meta["deletionTimestamp"] = TERMINATING
    return {**pod, "metadata": meta, **({"status": status} if status else {})}


def killed() -> dict[str, object]:
    """A worker's status once SIGTERM ended it: Failed, exit code 143."""
    return dict(PodBuilder("x").failed(143).obj()["status"])


async def test_a_launcher_past_its_deadline_fails_the_job_despite_a_failure_policy() -> None:
    """activeDeadlineSeconds is terminal: the killed launcher pod is not a failure for
    the policy's default rule to restart."""
    builder = MPIJobBuilder("pi").failure_policy(3).run_policy(activeDeadlineSeconds=60)
    world = await running(builder)
    deadline = {
        "type": "Failed",
        "status": "True",
        "reason": "DeadlineExceeded",
        "message": "Job was active longer than specified deadline",
    }
    world.change("Job", LAUNCHER, {"status": {"conditions": [deadline], "failed": 1}})
    world.change("Pod", LAUNCHER_POD, PodBuilder("x").failed(137).obj())
    await world.sync()
    assert conditions(world)["Failed"] == ("True", "DeadlineExceeded")
    assert "restartCount" not in world.status


async def test_a_resumed_job_gets_its_full_workers_ready_timeout() -> None:
    world = await running(MPIJobBuilder("pi").workers_ready_timeout(30))
    suspend(world, True)
    await world.converge()
    world.step(3600)
    suspend(world, False)
    await world.sync()
    assert "Failed" not in conditions(world)
    assert conditions(world)["Suspended"][0] == "False"
    # The clock started at the resume: the timeout fires 30 s after it, not before.
    world.settle()
    world.clear()
    world.step(29)
    await world.sync()
    assert world.event_messages("WorkersNotReady") == []
    world.settle()
    world.clear()
    world.step(2)
    await world.sync()
    assert conditions(world)["Failed"] == ("True", "WorkersNotReady")


async def test_a_resumed_launcher_waits_for_new_workers_not_terminating_ones() -> None:
    """With WaitForWorkersReady the launcher stays suspended while the Ready workers
    are the ones deleted on suspension."""
    world = await running(MPIJobBuilder("pi").wait_for_workers_ready())
    old = [world.cached("Pod", f"pi-worker-{i}") or {} for i in range(2)]
    suspend(world, True)
    await world.sync()
    world.forget()  # the informers have not shown the deletes yet
    world.change("Job", LAUNCHER, {"spec": {"suspend": True}})
    world.add(*(terminating(pod) for pod in old))
    suspend(world, False)
    await world.sync()
    assert ("update", "jobs", LAUNCHER) not in world.writes


async def test_a_worker_deleted_by_name_on_suspension_is_not_a_failure_on_resume() -> None:
    """One worker goes by name (no collection): killed while it terminates, it is
    not judged by the failure policy when the job resumes."""
    world = await running(MPIJobBuilder("pi").failure_policy(2), replicas=1)
    old = world.cached("Pod", "pi-worker-0") or {}
    suspend(world, True)
    await world.sync()
    assert ("delete", "pods", "pi-worker-0") in world.writes
    world.clear()
    world.add(terminating(old, killed()))
    suspend(world, False)
    await world.sync()
    assert "restartCount" not in world.status
    assert world.event_messages("MPIJobRestarting") == []


async def test_a_job_that_fails_while_restarting_is_no_longer_restarting() -> None:
    world = await running(MPIJobBuilder("pi").failure_policy(1))
    world.change("Pod", "pi-worker-0", {"status": PodBuilder("x").failed(1).obj()["status"]})
    await world.sync()
    world.settle()
    world.remove("Pod", LAUNCHER_POD)
    await world.converge()
    cached = (world.cached("MPIJob", "pi") or {})["status"]["conditions"]
    assert {c["type"]: c["status"] for c in cached}["Restarting"] == "True"
    # The second attempt fails before it ever ran: maxRestarts is reached.
    world.change("Pod", "pi-worker-1", {"status": PodBuilder("x").failed(2).obj()["status"]})
    await world.sync()
    assert conditions(world)["Failed"][0] == "True"
    assert conditions(world)["Restarting"][0] == "False"


async def test_a_zero_ttl_deletes_the_mpijob_in_the_sync_that_finishes_it() -> None:
    builder = MPIJobBuilder("pi").clean_pod_policy("Running").ttl_after_finished(0)
    world = await running(builder)
    done = {
        "conditions": [{"type": "Complete", "status": "True"}],
        "succeeded": 1,
        "completionTime": "2026-01-01T00:00:00Z",
    }
    world.change("Job", LAUNCHER, {"status": done})
    world.change("Pod", LAUNCHER_POD, {"status": {"phase": "Succeeded"}})
    await world.sync()
    writes = world.writes
    assert writes[-1] == ("delete", "mpijobs", "pi")
    pod_deletes = [i for i, (verb, kind, _) in enumerate(writes) if kind == "pods"]
    assert pod_deletes
    assert writes.index(("update", "mpijobs/status", "pi")) < min(pod_deletes)


async def test_a_launcher_job_the_operator_stopped_is_deleted_after_its_ttl() -> None:
    """Under the Launcher TTL policy a launcher Job suspended to stop it never finishes,
    so no TTL controller would delete it: the operator does, counted from the MPIJob's
    completionTime."""
    builder = MPIJobBuilder("pi").workers(2).workers_ready_timeout(30)
    world = kubeflow_world(builder.ttl_after_finished(60, policy="Launcher").obj())
    await world.converge()
    world.step(31)
    await world.sync()
    assert conditions(world)["Failed"] == ("True", "WorkersNotReady")
    assert ("patch", "jobs", LAUNCHER) in world.writes  # suspended: stopped
    world.clear()  # the launcher Job's watch event syncs the job again
    await world.sync()
    assert world.writes == []
    assert world.requeued_after == [("default/pi", 60.0)]
    world.step(60)
    await world.sync()
    assert world.writes == [("delete", "jobs", LAUNCHER)]
