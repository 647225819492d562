"""What happens when pods fail, on the full local cluster through the real kubectl:
the launcher stopped on every terminal path (#647), the culprit named, the failure
policy's restarts. Pods fail through the KWOK stages (exit codes, OOMKilled, eviction)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from examples_support import in_process_operator, kubectl_json, kubectl_table
from failure_support import (
    JOB_NAME,
    apply_job,
    condition,
    job_events,
    job_pods,
    oom_job,
    patch_suspend,
    wait_condition,
)

from devcluster import (
    COMPLETE_AFTER,
    EVICT_AFTER,
    EXIT_CODE,
)
from devcluster.polling import eventually
from devcluster.sample_jobs import pi_mpijob
from mpi_operator.controller.controller import MPIJobController

Obj = dict[str, Any]


@pytest.fixture
async def operator(full_cluster: Any, full_namespace: str) -> AsyncIterator[MPIJobController]:
    async with in_process_operator(full_cluster, full_namespace) as controller:
        yield controller


def _evicted_workers_job(name: str, policy: str) -> Obj:
    """Upstream #647: a launcher that runs until stopped, workers evicted soon after start."""
    worker = {
        "metadata": {"annotations": {EVICT_AFTER: "3s"}},
        "spec": {"containers": [{"name": "worker", "image": "mpi-pi"}]},
    }
    job = pi_mpijob(name, launcher_exit=None, worker_template=worker)
    job["spec"]["runPolicy"]["cleanPodPolicy"] = policy
    return job


@pytest.mark.parametrize("policy", ["Running", "All"])
async def test_evicted_workers_leave_nothing_running(
    full_cluster: Any, full_namespace: str, operator: MPIJobController, policy: str
) -> None:
    ns, name = full_namespace, f"evicted-{policy.lower()}"
    await apply_job(full_cluster, ns, _evicted_workers_job(name, policy))
    await wait_condition(full_cluster, ns, name, "Running", within=60)
    failed = await wait_condition(full_cluster, ns, name, "Failed", within=60)
    seen_failed = time.monotonic()
    assert failed["reason"] == "MPIJobEvicted"
    assert re.fullmatch(r"[12]/2 workers are evicted", failed["message"])

    def alive(pod: Obj) -> bool:
        if policy == "All" and pod["metadata"]["labels"].get("training.kubeflow.org/job-role") == (
            "worker"
        ):
            return True  # All deletes every worker, evicted ones included
        return pod["status"].get("phase") in ("Pending", "Running")

    async def nothing_runs() -> bool:
        return not any(alive(p) for p in await job_pods(full_cluster, ns, name))

    await eventually(nothing_runs, within=30, interval=0.2, what="no launcher or worker running")
    assert time.monotonic() - seen_failed <= 5.0
    # The launcher Job stays, suspended, to be inspected; no pod comes back.
    launcher = await kubectl_json(full_cluster, "get", "job", f"{name}-launcher", "-n", ns)
    assert launcher["spec"]["suspend"] is True
    job = await kubectl_json(full_cluster, "get", "mpijob", name, "-n", ns)
    assert job["status"]["completionTime"]
    assert (await condition(full_cluster, ns, name, "Failed"))["reason"] == "MPIJobEvicted"
    assert ("Warning", "MPIJobEvicted", failed["message"]) in await job_events(
        full_cluster, ns, name
    )
    assert not any(alive(p) for p in await job_pods(full_cluster, ns, name))


OOM = re.compile(r"worker (\S+-worker-[01]) container worker terminated: OOMKilled \(exit 137\)")


async def _uids(cluster: Any, ns: str, name: str) -> dict[str, str]:
    out = {}
    for kind, child in (
        ("service", name),
        ("configmap", f"{name}-config"),
        ("secret", f"{name}-ssh"),
    ):
        out[kind] = (await kubectl_json(cluster, "get", kind, child, "-n", ns))["metadata"]["uid"]
    return out


async def test_a_worker_oomkilled_once_is_restarted_and_the_job_succeeds(
    full_cluster: Any, full_namespace: str, operator: MPIJobController
) -> None:
    ns, name = full_namespace, "oom-once"
    await apply_job(
        full_cluster, ns, oom_job(name, first_run_only=True, clean_pod_policy="Running")
    )
    await wait_condition(full_cluster, ns, name, "Created", within=30)

    async def children_made() -> bool:
        try:
            await _uids(full_cluster, ns, name)
        except Exception:
            return False
        return True

    await eventually(children_made, within=30, interval=0.3, what="service, config, secret")
    before = await _uids(full_cluster, ns, name)
    await wait_condition(full_cluster, ns, name, "Succeeded", within=120)
    job = await kubectl_json(full_cluster, "get", "mpijob", name, "-n", ns)
    status = job["status"]
    assert status["restartCount"] == 1
    assert OOM.fullmatch(status["lastFailure"]["message"]), status["lastFailure"]
    assert status["lastFailure"]["reason"] == "OOMKilled"
    assert status["lastFailure"]["exitCode"] == 137
    assert status["replicaStatuses"]["Launcher"] == {"succeeded": 1}
    # The Service, ConfigMap and Secret survive the restart; the launcher is new.
    assert await _uids(full_cluster, ns, name) == before
    launcher = await kubectl_json(full_cluster, "get", "job", f"{name}-launcher", "-n", ns)
    assert launcher["metadata"]["labels"]["training.kubeflow.org/restart-attempt"] == "1"
    restarts = [e for e in await job_events(full_cluster, ns, name) if e[1] == "MPIJobRestarting"]
    assert len(restarts) == 1 and restarts[0][0] == "Warning"
    message = restarts[0][2]
    assert message.startswith("restart 1 of 2 (rule oom): ")
    assert OOM.fullmatch(message.removeprefix("restart 1 of 2 (rule oom): "))
    types = [c["type"] for c in status["conditions"] if c["status"] == "True"]
    assert "Restarting" not in types and "Succeeded" in types
    rows = await asyncio.to_thread(
        kubectl_table, full_cluster, "mpij", name, "-n", ns, "-o", "wide"
    )
    assert rows[0]["RESTARTS"] == "1"
    assert rows[0]["FAILURE"] == status["lastFailure"]["message"]


async def test_a_worker_oomkilled_every_run_fails_the_job_after_max_restarts(
    full_cluster: Any, full_namespace: str, operator: MPIJobController
) -> None:
    ns, name = full_namespace, "oom-always"
    await apply_job(full_cluster, ns, oom_job(name, first_run_only=False, clean_pod_policy="All"))
    failed = await wait_condition(full_cluster, ns, name, "Failed", within=180)
    seen_failed = time.monotonic()
    assert failed["reason"] == "ReachedMaxRestarts"
    assert failed["message"].startswith("reached maxRestarts 2 (rule oom): ")
    assert OOM.fullmatch(failed["message"].removeprefix("reached maxRestarts 2 (rule oom): "))

    async def no_pods() -> bool:
        return await job_pods(full_cluster, ns, name) == []

    await eventually(no_pods, within=30, interval=0.2, what="every pod gone")
    assert time.monotonic() - seen_failed <= 5.0
    job = await kubectl_json(full_cluster, "get", "mpijob", name, "-n", ns)
    assert job["status"]["restartCount"] == 2
    events = await job_events(full_cluster, ns, name)
    restarts = sorted(e[2][:16] for e in events if e[1] == "MPIJobRestarting")
    assert restarts == ["restart 1 of 2 (", "restart 2 of 2 ("]
    assert ("Warning", "ReachedMaxRestarts", failed["message"]) in events


async def test_a_fail_job_rule_stops_the_launcher_at_once(
    full_cluster: Any, full_namespace: str, operator: MPIJobController
) -> None:
    ns, name = full_namespace, "exit-three"
    worker = {
        "metadata": {"annotations": {COMPLETE_AFTER: "2s", EXIT_CODE: "3"}},
        "spec": {"containers": [{"name": "worker", "image": "mpi-pi"}]},
    }
    job = pi_mpijob(name, launcher_exit=None, worker_template=worker)
    job["spec"]["runPolicy"]["failurePolicy"] = {
        "rules": [
            {
                "name": "bad-input",
                "action": "FailJob",
                "onExitCodes": {"operator": "In", "values": [3]},
            }
        ]
    }
    await apply_job(full_cluster, ns, job)
    failed = await wait_condition(full_cluster, ns, name, "Failed", within=60)
    seen_failed = time.monotonic()
    assert failed["reason"] == "PodFailurePolicy"
    assert re.fullmatch(
        rf"rule bad-input fails the job: worker {name}-worker-[01] container worker "
        r"terminated: Error \(exit 3\)",
        failed["message"],
    )

    async def nothing_runs() -> bool:
        pods = await job_pods(full_cluster, ns, name)
        return not any(p["status"].get("phase") in ("Pending", "Running") for p in pods)

    await eventually(nothing_runs, within=30, interval=0.2, what="no launcher or worker running")
    assert time.monotonic() - seen_failed <= 5.0
    assert ("Warning", "PodFailurePolicy", failed["message"]) in await job_events(
        full_cluster, ns, name
    )


async def test_a_failed_launcher_is_named_without_changing_the_reference_events(
    full_cluster: Any, full_namespace: str, operator: MPIJobController
) -> None:
    """No failure policy: the reference's Failed condition and events, plus lastFailure."""
    ns, name = full_namespace, "broken"
    await apply_job(full_cluster, ns, pi_mpijob(name, launcher_exit=3))
    failed = await wait_condition(full_cluster, ns, name, "Failed", within=60)
    assert failed["reason"].startswith("BackoffLimitExceeded")
    job = await kubectl_json(full_cluster, "get", "mpijob", name, "-n", ns)
    failure = job["status"]["lastFailure"]
    assert re.fullmatch(
        rf"launcher {name}-launcher-\S+ container launcher terminated: Error \(exit 3\)",
        failure["message"],
    ), failure
    assert (failure["replicaType"], failure["container"], failure["exitCode"]) == (
        "Launcher",
        "launcher",
        3,
    )
    reasons = {e[1] for e in await job_events(full_cluster, ns, name)}
    assert {"MPIJobCreated", failed["reason"]} <= reasons
    assert reasons <= {"MPIJobCreated", "MPIJobRunning", failed["reason"]}
    rows = await asyncio.to_thread(
        kubectl_table, full_cluster, "mpij", name, "-n", ns, "-o", "wide"
    )
    assert rows[0]["FAILURE"] == failure["message"] and rows[0]["RESTARTS"] == ""


async def _gone(cluster: Any, ns: str, *what: str) -> bool:
    result = await asyncio.to_thread(cluster.kubectl, "get", *what, "-n", ns, check=False)
    return "NotFound" in result.stderr


async def test_ttl_policy_mpijob_deletes_the_finished_mpijob_and_its_children(
    full_cluster: Any, full_namespace: str, operator: MPIJobController
) -> None:
    ns = full_namespace
    deleted = pi_mpijob("short-lived", launcher_exit=0, complete_after="2s")
    deleted["spec"]["runPolicy"].update(
        ttlSecondsAfterFinished=3, ttlSecondsAfterFinishedPolicy="MPIJob"
    )
    kept = pi_mpijob("kept", launcher_exit=0, complete_after="2s")
    kept["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 3
    await apply_job(full_cluster, ns, deleted)
    await apply_job(full_cluster, ns, kept)
    await wait_condition(full_cluster, ns, "short-lived", "Succeeded", within=60)
    await wait_condition(full_cluster, ns, "kept", "Succeeded", within=60)

    await eventually(
        lambda: _gone(full_cluster, ns, "mpijob", "short-lived"),
        within=30, interval=0.5, what="the MPIJob deleted after its TTL",
    )  # fmt: skip

    async def no_children() -> bool:
        selector = f"{JOB_NAME}=short-lived"
        for kind in ("pods", "jobs", "services", "configmaps", "secrets"):
            items = await kubectl_json(full_cluster, "get", kind, "-n", ns, "-l", selector)
            if items["items"]:
                return False
        return True

    await eventually(no_children, within=60, interval=0.5, what="its children collected")
    # Without the opt-in the TTL keeps the reference's meaning: the launcher Job goes,
    # the MPIJob stays.
    await eventually(
        lambda: _gone(full_cluster, ns, "job", "kept-launcher"),
        within=60, interval=0.5, what="the launcher Job deleted by its own TTL",
    )  # fmt: skip
    job = await kubectl_json(full_cluster, "get", "mpijob", "kept", "-n", ns)
    assert job["metadata"]["name"] == "kept"


async def test_a_resumed_launcher_waits_for_its_workers_to_be_ready(
    full_cluster: Any, full_namespace: str, operator: MPIJobController
) -> None:
    """Upstream #615: with WaitForWorkersReady, after a suspend and a resume, the launcher
    is not released before every worker is Ready again."""
    ns, name = full_namespace, "gated"
    worker = {
        "metadata": {"annotations": {"kwok.mpi-operator.io/start-delay": "4s"}},
        "spec": {"containers": [{"name": "worker", "image": "mpi-pi"}]},
    }
    job = pi_mpijob(
        name, launcher_exit=None, creation_policy="WaitForWorkersReady", worker_template=worker
    )
    await apply_job(full_cluster, ns, job)
    await wait_condition(full_cluster, ns, name, "Running", within=60)
    await patch_suspend(full_cluster, ns, name, True)
    await wait_condition(full_cluster, ns, name, "Suspended", within=30)

    async def all_pods_gone() -> bool:
        return await job_pods(full_cluster, ns, name) == []

    await eventually(all_pods_gone, within=30, interval=0.3, what="suspended: no pods")
    await patch_suspend(full_cluster, ns, name, False)
    await wait_condition(full_cluster, ns, name, "Running", within=60)
    pods = await job_pods(full_cluster, ns, name)
    role = "training.kubeflow.org/job-role"
    (launcher,) = [p for p in pods if p["metadata"]["labels"].get(role) == "launcher"]
    workers = [p for p in pods if p["metadata"]["labels"].get(role) == "worker"]
    ready = [
        c["lastTransitionTime"]
        for w in workers
        for c in w["status"]["conditions"]
        if c["type"] == "Ready" and c["status"] == "True"
    ]
    assert len(ready) == 2
    # RFC 3339 UTC stamps of one format compare as strings.
    assert launcher["metadata"]["creationTimestamp"] >= max(ready), (launcher, ready)


async def test_workers_not_ready_in_time_fail_the_job_naming_them(
    full_cluster: Any, full_namespace: str, operator: MPIJobController
) -> None:
    ns, name = full_namespace, "slow-workers"
    worker = {
        "metadata": {"annotations": {"kwok.mpi-operator.io/start-delay": "60s"}},
        "spec": {"containers": [{"name": "worker", "image": "mpi-pi"}]},
    }
    job = pi_mpijob(name, launcher_exit=None, worker_template=worker)
    job["spec"]["runPolicy"]["workersReadyTimeoutSeconds"] = 3
    await apply_job(full_cluster, ns, job)
    failed = await wait_condition(full_cluster, ns, name, "Failed", within=30)
    seen_failed = time.monotonic()
    assert failed["reason"] == "WorkersNotReady"
    assert failed["message"] == (
        f"2/2 workers were not Ready within 3s: {name}-worker-0, {name}-worker-1"
    )
    assert ("Warning", "WorkersNotReady", failed["message"]) in await job_events(
        full_cluster, ns, name
    )

    async def nothing_runs() -> bool:
        pods = await job_pods(full_cluster, ns, name)
        return not any(p["status"].get("phase") in ("Pending", "Running") for p in pods)

    await eventually(nothing_runs, within=30, interval=0.2, what="no launcher or worker left")
    assert time.monotonic() - seen_failed <= 5.0
