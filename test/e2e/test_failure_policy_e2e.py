"""The failure policy beyond a plain restart, on the full local cluster through the real
kubectl: a failure a rule ignores (only that pod is recreated), a restart of a gang
scheduled by volcano (its PodGroup stays), and a restart with a suspend and a resume
(the count holds, the resumed launcher waits for its workers)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from examples_support import VolcanoStandIn, in_process_operator, items, kubectl_json
from examples_support import kubectl_async as kubectl
from failure_support import (
    apply_job,
    condition,
    event_objects,
    job_events,
    job_pods,
    oom_job,
    patch_suspend,
    ready_times,
    role,
    wait_condition,
)

from devcluster import COMPLETE_AFTER, EXIT_CODE, REASON
from devcluster.polling import eventually
from devcluster.sample_jobs import pi_mpijob
from mpi_operator.builders.podgroup import GangScheduling
from mpi_operator.controller.controller import MPIJobController

Obj = dict[str, Any]
ATTEMPT = "training.kubeflow.org/restart-attempt"


@pytest.fixture
async def operator(full_cluster: Any, full_namespace: str) -> AsyncIterator[MPIJobController]:
    async with in_process_operator(full_cluster, full_namespace) as controller:
        yield controller


async def _mpijob(cluster: Any, ns: str, name: str) -> Obj:
    job: Obj = await kubectl_json(cluster, "get", "mpijob", name, "-n", ns)
    return job


async def _uids_by_name(cluster: Any, ns: str, name: str, kind: str) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in await job_pods(cluster, ns, name)
        if role(p) == kind
    }


async def test_an_ignored_worker_failure_recreates_only_that_pod(
    full_cluster: Any, full_namespace: str, operator: MPIJobController
) -> None:
    """A worker OOMKilled while the job runs, under a rule whose action is Ignore: that
    pod alone is deleted and made again, nothing is restarted, the job succeeds."""
    ns, name = full_namespace, "ignored"
    job = pi_mpijob(name, launcher_exit=0, complete_after="15s")
    job["spec"]["runPolicy"]["failurePolicy"] = {
        "maxRestarts": 2,
        "rules": [
            {
                "name": "lost-worker",
                "action": "Ignore",
                "targetReplicaTypes": ["Worker"],
                "onExitCodes": {"containerName": "worker", "operator": "In", "values": [137]},
            }
        ],
    }
    await apply_job(full_cluster, ns, job)
    await wait_condition(full_cluster, ns, name, "Running", within=60)
    workers = await _uids_by_name(full_cluster, ns, name, "worker")
    launchers = await _uids_by_name(full_cluster, ns, name, "launcher")
    launcher_job = await kubectl_json(full_cluster, "get", "job", f"{name}-launcher", "-n", ns)
    victim, bystander = f"{name}-worker-1", f"{name}-worker-0"
    assert set(workers) == {victim, bystander} and len(launchers) == 1
    # The KWOK stage pod-complete makes the running pod fail at once: OOMKilled, 137.
    await kubectl(
        full_cluster,
        "annotate",
        "pod",
        victim,
        "-n",
        ns,
        f"{COMPLETE_AFTER}=0s",
        f"{EXIT_CODE}=137",
        f"{REASON}=OOMKilled",
    )

    async def recreated() -> bool:
        pods = {p["metadata"]["name"]: p for p in await job_pods(full_cluster, ns, name)}
        pod = pods.get(victim)
        return (
            pod is not None
            and pod["metadata"]["uid"] != workers[victim]
            and pod["status"].get("phase") == "Running"
        )

    await eventually(recreated, within=30, interval=0.2, what=f"{victim} recreated and running")
    # Only the failed pod was made again: the other worker and the launcher run on.
    assert (await _uids_by_name(full_cluster, ns, name, "worker"))[bystander] == workers[bystander]
    assert await _uids_by_name(full_cluster, ns, name, "launcher") == launchers
    assert not any(
        ATTEMPT in p["metadata"]["labels"] for p in await job_pods(full_cluster, ns, name)
    )
    succeeded = await wait_condition(full_cluster, ns, name, "Succeeded", within=60)
    assert succeeded["reason"] == "MPIJobSucceeded"
    assert await _uids_by_name(full_cluster, ns, name, "launcher") == launchers
    again = await kubectl_json(full_cluster, "get", "job", f"{name}-launcher", "-n", ns)
    assert again["metadata"]["uid"] == launcher_job["metadata"]["uid"]
    status = (await _mpijob(full_cluster, ns, name))["status"]
    assert status.get("restartCount", 0) == 0
    assert "lastFailure" not in status
    assert status["replicaStatuses"]["Launcher"] == {"succeeded": 1}
    assert (await condition(full_cluster, ns, name, "Restarting")) == {}
    events = await event_objects(full_cluster, ns, name)
    ignored = [e for e in events if e["reason"] == "PodFailureIgnored"]
    assert [(e["type"], e["message"], e.get("count", 1)) for e in ignored] == [
        (
            "Warning",
            "rule lost-worker ignores the failure, the pod is recreated: "
            f"worker {victim} container worker terminated: OOMKilled (exit 137)",
            1,
        )
    ]
    reasons = {e["reason"] for e in events}
    assert not reasons & {"MPIJobRestarting", "PodFailed", "ReachedMaxRestarts"}


async def test_a_gang_restart_keeps_the_volcano_pod_group(
    full_cluster: Any, full_namespace: str
) -> None:
    """--gang-scheduling=volcano: a worker OOMKilled once restarts the gang; the PodGroup
    stays (one uid throughout), the new pods are bound as a gang again, and the job
    succeeds with restartCount 1. Volcano is played by VolcanoStandIn."""
    ns, name = full_namespace, "gang-restart"
    job = oom_job(name, first_run_only=True, clean_pod_policy="Running", launcher_runs_for="6s")
    job["spec"]["runPolicy"]["schedulingPolicy"] = {"minAvailable": 3}
    volcano = VolcanoStandIn(full_cluster, ns)
    async with in_process_operator(full_cluster, ns, gang=GangScheduling.volcano()):
        await apply_job(full_cluster, ns, job)

        async def succeeded() -> bool:
            await asyncio.to_thread(volcano)
            return (await condition(full_cluster, ns, name, "Succeeded")).get("status") == "True"

        await eventually(succeeded, within=120, interval=0.3, what=f"{name} Succeeded")
        status = (await _mpijob(full_cluster, ns, name))["status"]
        assert status["restartCount"] == 1
        assert status["lastFailure"]["reason"] == "OOMKilled"
        # One PodGroup, never recreated; two gangs of three bound: before and after.
        assert list(volcano.group_uids) == [name]
        assert len(volcano.group_uids[name]) == 1
        assert volcano.groups[name]["spec"]["minMember"] == 3
        assert len(volcano.bound) == 6
        workers = sorted(b for b in volcano.bound if "-worker-" in b)
        assert workers == [f"{name}-worker-0"] * 2 + [f"{name}-worker-1"] * 2
        pods = await job_pods(full_cluster, ns, name)
        assert pods and all(p["spec"]["schedulerName"] == "volcano" for p in pods)
        assert all(p["metadata"]["labels"].get(ATTEMPT) == "1" for p in pods)
        restarts = [
            e for e in await job_events(full_cluster, ns, name) if e[1] == "MPIJobRestarting"
        ]
        assert len(restarts) == 1 and restarts[0][2].startswith("restart 1 of 2 (rule oom): ")
        # Finished: the operator removed its PodGroup.
        podgroups = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"

        async def no_pod_group() -> bool:
            return not await asyncio.to_thread(items, full_cluster, podgroups)

        await eventually(no_pod_group, within=30, interval=0.3, what="the PodGroup deleted")


@pytest.mark.parametrize("when", ["restarting", "rerunning"])
async def test_a_restarted_job_suspended_and_resumed_completes(
    full_cluster: Any, full_namespace: str, operator: MPIJobController, when: str
) -> None:
    """A worker OOMKilled on the first run restarts the job; the job is then suspended
    (as soon as the restart is counted, or once it runs again) and resumed. The
    restart is counted once, the suspend is no restart, the pods after the resume
    belong to attempt 1 (so they do not fail again), and with WaitForWorkersReady the
    resumed launcher waits for every worker to be Ready (upstream #615)."""
    ns, name = full_namespace, f"suspended-{when}"
    job = oom_job(
        name,
        first_run_only=True,
        clean_pod_policy="Running",
        launcher_runs_for="8s",
        creation_policy="WaitForWorkersReady",
        start_delay="3s",
    )
    await apply_job(full_cluster, ns, job)

    async def restarted() -> bool:
        status = (await _mpijob(full_cluster, ns, name)).get("status") or {}
        return bool(status.get("restartCount") == 1)

    await eventually(restarted, within=60, interval=0.1, what=f"{name} restarted")
    if when == "rerunning":
        await wait_condition(full_cluster, ns, name, "Running", within=60)
    await patch_suspend(full_cluster, ns, name, True)
    await wait_condition(full_cluster, ns, name, "Suspended", within=30)

    async def suspended() -> bool:
        """No pods, and the launcher Job of attempt 1 suspended (made suspended when the
        suspend came before the restart had made it)."""
        if await job_pods(full_cluster, ns, name) != []:
            return False
        jobs = await kubectl_json(full_cluster, "get", "jobs", "-n", ns)
        return [
            (j["metadata"]["labels"].get(ATTEMPT), j["spec"].get("suspend")) for j in jobs["items"]
        ] == [("1", True)]

    await eventually(suspended, within=30, interval=0.3, what="suspended: no pods")
    assert (await _mpijob(full_cluster, ns, name))["status"]["restartCount"] == 1

    await patch_suspend(full_cluster, ns, name, False)
    await wait_condition(full_cluster, ns, name, "Running", within=60)
    pods = await job_pods(full_cluster, ns, name)
    (launcher_pod,) = [p for p in pods if role(p) == "launcher"]
    workers = [p for p in pods if role(p) == "worker"]
    assert all(p["metadata"]["labels"].get(ATTEMPT) == "1" for p in pods)
    ready = ready_times(workers)
    assert len(ready) == 2
    assert launcher_pod["metadata"]["creationTimestamp"] >= max(ready), (launcher_pod, ready)

    await wait_condition(full_cluster, ns, name, "Succeeded", within=60)
    status = (await _mpijob(full_cluster, ns, name))["status"]
    assert status["restartCount"] == 1
    assert status["replicaStatuses"]["Launcher"] == {"succeeded": 1}
    assert (await condition(full_cluster, ns, name, "Restarting")).get("status") != "True"
    events = await job_events(full_cluster, ns, name)
    assert [e[1] for e in events].count("MPIJobRestarting") == 1
    assert {"MPIJobSuspended", "MPIJobResumed", "MPIJobSucceeded"} <= {e[1] for e in events}
    assert "ReachedMaxRestarts" not in {e[1] for e in events}
