"""The Kubeflow sync handler with spec.elasticPolicy: a lost worker shrinks the job
instead of failing it (it leaves discover_hosts.sh, is recreated, the job keeps
running below its replicas), until fewer than minReplicas run for longer than
belowMinTimeoutSeconds; and a scale-down's workers leave discover_hosts.sh before
their pods are deleted, the launcher untouched."""

from __future__ import annotations

from typing import Any

from seam_objects import MPIJobBuilder, PodBuilder, pod_status
from sync_fixtures import SyncWorld, conditions, fail_worker, running

STATUS = ("update", "mpijobs/status", "pi")
CONFIG = ("update", "configmaps", "pi-config")
DISCOVER = "discover_hosts.sh"
LAUNCHER_POD = "pi-launcher-x7k2p"


def elastic(min_replicas: int = 2, timeout: int | None = None, **policy: Any) -> MPIJobBuilder:
    builder = MPIJobBuilder("pi")
    builder.spec["elasticPolicy"] = {"minReplicas": min_replicas, "maxReplicas": 4}
    if timeout is not None:
        builder.spec["elasticPolicy"]["belowMinTimeoutSeconds"] = timeout
    if policy:
        builder.run_policy(failurePolicy=policy)
    return builder


def evict(world: SyncWorld, index: int) -> None:
    world.change("Pod", f"pi-worker-{index}", {"status": PodBuilder("x").evicted().obj()["status"]})


def hosts(world: SyncWorld) -> list[str]:
    """The workers ``discover_hosts.sh`` lists, as the cache shows the ConfigMap."""
    config = world.cached("ConfigMap", "pi-config")
    assert config is not None
    lines = str(config["data"][DISCOVER]).splitlines()[1:]
    return [line.split()[1].split(".")[0] for line in lines]


def failed(world: SyncWorld) -> bool:
    """Whether a status written since the last clear says Failed."""
    return any(
        c["type"] == "Failed" and c["status"] == "True"
        for status in world.status_writes()
        for c in status.get("conditions") or []
    )


def run_worker(world: SyncWorld, index: int) -> None:
    world.change("Pod", f"pi-worker-{index}", {"status": pod_status("Running", ready=True)})


async def test_an_evicted_worker_leaves_the_hosts_and_is_recreated_while_the_job_runs() -> None:
    world = await running(elastic(), replicas=3)
    assert hosts(world) == ["pi-worker-0", "pi-worker-1", "pi-worker-2"]
    evict(world, 1)
    await world.sync()
    # Its host leaves discover_hosts.sh first; the status is written; then the pod goes.
    assert world.writes == [CONFIG, STATUS, ("delete", "pods", "pi-worker-1")]
    world.settle()
    assert hosts(world) == ["pi-worker-0", "pi-worker-2"]
    found = conditions(world)
    assert "Failed" not in found
    assert found["Running"] == ("True", "MPIJobRunning")
    assert found["BelowReplicas"] == ("True", "MPIJobBelowReplicas")
    assert world.status["state"] == "Running"
    assert world.status["lastFailure"]["pod"] == "pi-worker-1"
    (message,) = world.event_messages("MPIJobWorkerLost")
    assert message.startswith("worker pi-worker-1 failed: Evicted: node low on memory")
    assert ("Warning", "MPIJobWorkerLost") in world.events
    assert ("Normal", "MPIJobBelowReplicas") in world.events
    world.clear()
    # The pod is gone: the next sync recreates it.
    await world.sync()
    assert [w for w in world.writes if w[0] == "create"] == [("create", "pods", "pi-worker-1")]
    world.clear()
    run_worker(world, 1)
    await world.sync()
    assert conditions(world)["BelowReplicas"] == ("False", "MPIJobAtReplicas")
    assert ("Normal", "MPIJobAtReplicas") in world.events
    world.settle()
    assert hosts(world) == ["pi-worker-0", "pi-worker-1", "pi-worker-2"]


async def test_a_sync_before_the_cache_shows_the_delete_does_not_lose_the_worker_again() -> None:
    world = await running(elastic(), replicas=3)
    fail_worker(world, 2)
    await world.sync()
    assert ("delete", "pods", "pi-worker-2") in world.writes
    world.forget()  # the delete's watch event has not come yet
    await world.sync()
    assert not world.recorded("delete", "pods")
    assert not world.event_messages("MPIJobWorkerLost")
    assert not failed(world)


async def test_without_an_elastic_policy_an_evicted_worker_fails_the_job() -> None:
    world = await running(MPIJobBuilder("pi"), replicas=3)
    evict(world, 1)
    await world.sync()
    assert conditions(world)["Failed"] == ("True", "MPIJobEvicted")
    assert not world.event_messages("MPIJobWorkerLost")


async def test_below_min_replicas_longer_than_the_timeout_fails_the_job_naming_the_worker() -> None:
    world = await running(elastic(min_replicas=2, timeout=60), replicas=3)
    evict(world, 1)
    fail_worker(world, 2)
    await world.sync()
    found = conditions(world)
    assert found["BelowReplicas"] == ("True", "MPIJobBelowMinReplicas")
    assert "Failed" not in found
    (warning,) = world.event_messages("MPIJobBelowMinReplicas")
    assert "within 60s, the job fails" in warning
    assert ("pi", 60.0) in [(k.split("/")[1], s) for k, s in world.requeued_after]
    world.clear()
    await world.converge()  # the replacements are made, and stay Pending
    world.step(30)
    await world.sync()
    assert not failed(world)
    world.clear()
    world.step(31)
    await world.sync()
    found = conditions(world)
    assert found["Failed"] == ("True", "MPIJobBelowMinReplicas")
    assert found["BelowReplicas"][0] == "False"
    condition = next(c for c in world.status["conditions"] if c["type"] == "Failed")
    assert "fewer than minReplicas 2 workers Running for 60s" in condition["message"]
    # The culprit is the worker that failed first (the eviction's time is unknown).
    assert "(not Running: pi-worker-1, pi-worker-2)" in condition["message"]
    assert condition["message"].endswith(
        "worker pi-worker-2 container main terminated: Error (exit 1)"
    )
    assert world.status["lastFailure"]["pod"] == "pi-worker-2"
    (event,) = world.event_messages("MPIJobBelowMinReplicas")
    assert event == condition["message"]
    assert not world.recorded("create", "pods")  # a failing sync creates nothing


async def test_back_above_min_replicas_in_time_the_job_keeps_running() -> None:
    world = await running(elastic(min_replicas=2, timeout=60), replicas=3)
    evict(world, 1)
    evict(world, 2)
    await world.converge()
    run_worker(world, 1)
    await world.sync()
    assert conditions(world)["BelowReplicas"] == ("True", "MPIJobBelowReplicas")
    world.clear()
    world.step(120)
    await world.sync()
    assert not failed(world)


async def test_a_fail_job_rule_still_fails_an_elastic_job_at_once() -> None:
    rule = {"name": "bug", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
    world = await running(elastic(maxRestarts=1, rules=[rule]), replicas=3)
    fail_worker(world, 1, exit_code=42)
    await world.sync()
    assert conditions(world)["Failed"] == ("True", "PodFailurePolicy")
    assert not world.event_messages("MPIJobWorkerLost")


async def test_a_restart_rule_only_replaces_the_worker_of_an_elastic_job() -> None:
    world = await running(elastic(maxRestarts=1), replicas=3)
    fail_worker(world, 1)
    await world.sync()
    assert "Restarting" not in conditions(world)
    assert world.status.get("restartCount") is None
    assert [w for w in world.writes if w[0] == "delete"] == [("delete", "pods", "pi-worker-1")]
    assert world.event_messages("MPIJobWorkerLost")


async def test_with_a_failure_policy_the_timeout_restarts_the_job_within_max_restarts() -> None:
    world = await running(elastic(min_replicas=3, timeout=10, maxRestarts=1), replicas=3)
    fail_worker(world, 0)
    await world.converge()
    world.step(11)
    await world.sync()
    found = conditions(world)
    assert found["Restarting"] == ("True", "MPIJobRestarting")
    assert world.status["restartCount"] == 1
    (message,) = world.event_messages("MPIJobRestarting")
    assert message.startswith("restart 1 of 1: fewer than minReplicas 3 workers Running")
    assert "pi-worker-0" in message


async def test_a_failing_launcher_of_an_elastic_job_is_no_worker_loss() -> None:
    world = await running(elastic(), replicas=3)
    launcher_failed = PodBuilder("x").failed(1).obj()["status"]
    world.change("Pod", LAUNCHER_POD, {"status": launcher_failed})
    await world.sync()
    assert not world.event_messages("MPIJobWorkerLost")
    assert not world.recorded("delete", "pods")
    assert not world.recorded("delete", "jobs")


async def test_a_scale_down_takes_the_highest_workers_out_of_the_hosts_before_deleting_them() -> (
    None
):
    world = await running(elastic(min_replicas=1), replicas=4)
    assert hosts(world) == [f"pi-worker-{i}" for i in range(4)]
    world.change("MPIJob", "pi", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 2}}}})
    await world.sync()
    deletes = [w for w in world.writes if w[0] == "delete"]
    assert sorted(deletes) == [("delete", "pods", "pi-worker-2"), ("delete", "pods", "pi-worker-3")]
    assert world.writes.index(CONFIG) < world.writes.index(deletes[0])
    assert not [w for w in world.writes if w[1] in ("jobs", "jobs/status")]  # launcher untouched
    world.settle()
    assert hosts(world) == ["pi-worker-0", "pi-worker-1"]
    assert not failed(world)


async def test_a_terminating_worker_of_an_elastic_job_is_no_host() -> None:
    world = await running(elastic(min_replicas=1), replicas=3)
    world.change("Pod", "pi-worker-2", {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})
    await world.sync()
    assert CONFIG in world.writes
    world.settle()
    assert hosts(world) == ["pi-worker-0", "pi-worker-1"]


async def test_without_an_elastic_policy_a_terminating_worker_stays_a_host() -> None:
    world = await running(MPIJobBuilder("pi"), replicas=3)
    world.change("Pod", "pi-worker-2", {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})
    await world.sync()
    assert CONFIG not in world.writes


async def test_a_worker_being_deleted_counts_as_missing_and_is_not_lost_again() -> None:
    world = await running(elastic(), replicas=3)
    evict(world, 1)
    await world.sync()
    assert world.event_messages("MPIJobWorkerLost")
    world.forget()  # the delete is sent, the pod stays in the cache ...
    # ... as its deletion is held (a finalizer): the pod stays, Failed and terminating, past the
    # time the operator remembers its own deletes.
    world.change("Pod", "pi-worker-1", {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})
    world.step(400)
    await world.sync()
    assert not world.event_messages("MPIJobWorkerLost")
    assert not world.recorded("delete", "pods")
    assert not failed(world)


async def test_a_drained_worker_leaves_the_count_and_the_hosts_while_it_goes() -> None:
    world = await running(elastic(), replicas=3)
    world.change("Pod", "pi-worker-2", {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})
    await world.sync()
    assert conditions(world)["BelowReplicas"] == ("True", "MPIJobBelowReplicas")
    assert world.status["replicaStatuses"]["Worker"]["active"] == 2
    assert not world.event_messages("MPIJobWorkerLost")  # nothing failed
    world.clear()
    assert hosts(world) == ["pi-worker-0", "pi-worker-1"]
