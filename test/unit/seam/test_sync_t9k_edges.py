"""The T9k sync handler where an ending meets another change: debug switched off over
an exited debug pod, a status write lost after the clean-up, a pause asked as the job
ended, and a launcher still waiting for a worker that failed."""

from __future__ import annotations

import pytest
from recording_client import conflict
from seam_objects import T9kJobBuilder
from sync_fixtures import SyncWorld, pod_names, t9k_world
from sync_fixtures import running_t9k_job as running

from mpi_operator.controller.core import pods as core_pods

LAUNCHER = "pi-launcher"


def phase(world: SyncWorld) -> str:
    return str((world.cached("MPIJob", "pi") or {})["status"]["phase"])


async def test_switching_debug_off_does_not_end_the_job_by_an_exited_debug_pod() -> None:
    builder = T9kJobBuilder("pi").workers(1)
    builder.spec["runMode"] = {
        "debug": {"enabled": True, "replicaSpecs": [{"type": "launcher", "command": ["true"]}]}
    }
    world = await running(builder)
    world.change("Pod", LAUNCHER, {"status": {"phase": "Failed"}})  # the debug command ended
    await world.converge()
    assert phase(world) == "Debugging"
    world.change("MPIJob", "pi", {"spec": {"runMode": {"debug": {"enabled": False}}}})
    await world.sync()
    assert world.status["phase"] not in ("Failed", "Succeeded")
    assert ("delete", "pods", LAUNCHER) in world.writes  # it comes back in normal mode


async def test_a_finished_job_whose_status_write_failed_gets_no_new_workers() -> None:
    world = await running(T9kJobBuilder("pi").workers(2).clean_up_workers("all"))
    world.change("Pod", LAUNCHER, {"status": {"phase": "Succeeded"}})
    world.client.fail("update", "mpijobs/status", conflict("pi"), times=1)
    await world.sync_error()
    world.clear()  # the workers are gone, the status still says Running
    await world.sync()
    assert pod_names(world) == []
    assert world.status["phase"] == "Succeeded"


async def test_a_pause_asked_as_the_job_ended_keeps_the_ending() -> None:
    world = await running(T9kJobBuilder("pi").workers(1))
    world.change("Pod", LAUNCHER, {"status": {"phase": "Succeeded"}})
    world.change("MPIJob", "pi", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await world.converge()
    assert phase(world) == "Succeeded"


async def test_a_launcher_waiting_for_a_failed_worker_is_deleted_with_the_workers() -> None:
    world = await running(T9kJobBuilder("pi").workers(2).clean_up_workers("all"))
    world.change("Pod", LAUNCHER, {"status": {"phase": "Pending"}})  # in its init container
    world.change("Pod", "pi-worker-0", {"status": {"phase": "Failed"}})
    await world.converge()
    assert phase(world) == "Failed"
    assert world.names("Pod") == []


async def test_a_running_launcher_stays_when_a_worker_fails() -> None:
    """mpirun ends on its own, and its log says what went wrong."""
    world = await running(T9kJobBuilder("pi").workers(2).clean_up_workers("all"))
    world.change("Pod", "pi-worker-0", {"status": {"phase": "Failed"}})
    await world.converge()
    assert phase(world) == "Failed"
    assert world.names("Pod") == [LAUNCHER]


async def test_null_lists_in_the_template_are_as_if_absent() -> None:
    """A bare ``volumes:`` in YAML is null; the T9k template keeps it as it is."""
    builder = T9kJobBuilder("pi").workers(1)
    spec = builder.spec["worker"]["template"]["spec"]
    spec.update(volumes=None, initContainers=None)
    spec["containers"][0]["volumeMounts"] = None
    world = t9k_world(builder.obj())
    await world.sync()
    assert sorted(pod_names(world)) == [LAUNCHER, "pi-worker-0"]
    assert world.events == [("Normal", "MPIJobInitialized")]


async def test_a_scale_down_deletes_a_bounded_number_a_sync_and_no_pod_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """T9k scale-down 14 -> 1 worker with a cap of 10 deletes a sync: 8 on the first
    turn (one slow-start batch), then the rest, the key requeued in between; a surplus
    pod already terminating is not deleted again (with the cap, re-deleting the same
    terminating pods would keep a sync from getting on with the others)."""
    monkeypatch.setattr(core_pods, "MAX_DELETES_PER_SYNC", 10)
    world = await running(T9kJobBuilder("pi").workers(14))
    terminating = {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}
    world.change("Pod", "pi-worker-13", terminating)
    world.change("MPIJob", "pi", {"spec": {"worker": {"replicas": 1}}})
    await world.sync()
    first = {name for verb, kind, name in world.writes if (verb, kind) == ("delete", "pods")}
    assert len(first) == 8 and world.requeued == ["default/pi"]
    world.clear()
    await world.sync()
    rest = {name for verb, kind, name in world.writes if (verb, kind) == ("delete", "pods")}
    assert first | rest == {f"pi-worker-{i}" for i in range(1, 13)}
    assert world.requeued == []
