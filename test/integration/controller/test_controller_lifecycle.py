"""An MPIJob's life against the real API server: create, run, finish, clean up."""

from __future__ import annotations

import base64

from controller_harness import Cluster, StartOperator, mpijob

from devcluster.polling import eventually
from mpi_operator.client import CONFIGMAPS, MPIJOBS, SECRETS, SERVICES

OPERATOR_LABEL = "training.kubeflow.org/operator-name=mpi-operator"


async def test_success_creates_children_runs_and_cleans_up(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    await start_operator()
    await cluster.create(mpijob(runPolicy={"cleanPodPolicy": "Running"}))

    workers = await cluster.wait_workers(2)
    await cluster.wait_condition("Created")
    assert await cluster.wait_event("MPIJobCreated") == (
        "Normal",
        "MPIJobCreated",
        f"MPIJob {cluster.ns}/job is created.",
    )
    launcher = await cluster.wait_launcher()
    assert launcher["spec"]["template"]["spec"]["hostname"] == "job-launcher"
    for resource, name in ((SERVICES, "job"), (CONFIGMAPS, "job-config"), (SECRETS, "job-ssh")):
        objs = [
            o for o in await cluster.list(resource, OPERATOR_LABEL) if o["metadata"]["name"] == name
        ]
        assert len(objs) == 1, name
        owner = objs[0]["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("MPIJob", "job", True)
    secret = next(s for s in await cluster.list(SECRETS) if s["metadata"]["name"] == "job-ssh")
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert base64.b64decode(secret["data"]["ssh-publickey"]).startswith(b"ecdsa-sha2-nistp521")
    await cluster.wait_replicas({"Launcher": {}, "Worker": {}})

    await cluster.set_pods_running(workers)
    await cluster.wait_replicas({"Launcher": {}, "Worker": {"active": 2}})

    async def hostfile_lists_running_workers() -> bool:
        cms = [c for c in await cluster.list(CONFIGMAPS) if c["metadata"]["name"] == "job-config"]
        script = cms[0]["data"]["discover_hosts.sh"]
        return script == (
            f"#!/bin/sh\necho job-worker-0.job.{cluster.ns}.svc\n"
            f"echo job-worker-1.job.{cluster.ns}.svc\n"
        )

    await eventually(hostfile_lists_running_workers, what="discover_hosts.sh lists both workers")

    await cluster.create_launcher_pod(launcher)
    await cluster.wait_condition("Running")
    await cluster.wait_replicas({"Launcher": {"active": 1}, "Worker": {"active": 2}})
    await cluster.wait_event("MPIJobRunning")

    await cluster.finish_launcher(succeeded=True)
    await cluster.wait_condition("Succeeded")
    await cluster.wait_condition("Running", "False")
    await cluster.wait_workers(0)
    await cluster.wait_replicas({"Launcher": {"succeeded": 1}, "Worker": {}})
    job = await cluster.job()
    assert job["status"]["completionTime"] and job["status"]["startTime"]
    assert (await cluster.wait_event("MPIJobSucceeded"))[2] == (
        f"MPIJob {cluster.ns}/job successfully completed."
    )


async def test_wait_for_workers_ready_delays_the_launcher(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    await start_operator()
    await cluster.create(mpijob(launcherCreationPolicy="WaitForWorkersReady"))
    workers = await cluster.wait_workers(2)
    await cluster.wait_condition("Created")
    assert await cluster.launcher() is None
    await cluster.set_pods_running(workers[:1], ready=True)
    await cluster.wait_replicas({"Worker": {"active": 1}})
    assert await cluster.launcher() is None
    await cluster.set_pods_running(workers[1:], ready=True)

    async def launcher_exists() -> bool:
        return await cluster.launcher() is not None

    await eventually(launcher_exists, what="launcher created once all workers are ready")


async def test_launcher_backoff_limit_failure_reports_the_pod_reason(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    await start_operator()
    await cluster.create(mpijob(workers=1))
    await cluster.wait_workers(1)
    launcher = await cluster.wait_launcher()
    await cluster.create_launcher_pod(
        launcher, phase="Failed", reason="OOMKilled", message="ran out of memory"
    )
    await cluster.finish_launcher(
        succeeded=False,
        reason="BackoffLimitExceeded",
        message="Job has reached the specified backoff limit",
    )
    await cluster.wait_condition("Failed")
    conditions = await cluster.conditions()
    assert conditions["Failed"] == ("True", "BackoffLimitExceeded/OOMKilled")
    job = await cluster.job()
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert failed["message"] == "Job has reached the specified backoff limit: ran out of memory"
    assert job["status"]["completionTime"]
    event = await cluster.wait_event("BackoffLimitExceeded/OOMKilled")
    assert event[0] == "Warning"


async def test_evicted_worker_fails_the_job(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    await start_operator()
    await cluster.create(mpijob())
    workers = await cluster.wait_workers(2)
    await cluster.set_pod_status(workers[0], phase="Failed", reason="Evicted")
    await cluster.wait_condition("Failed")
    assert (await cluster.conditions())["Failed"] == ("True", "MPIJobEvicted")
    assert await cluster.wait_event("MPIJobEvicted") == (
        "Warning",
        "MPIJobEvicted",
        "1/2 workers are evicted",
    )


async def test_scale_down_removes_the_highest_workers(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    await start_operator()
    await cluster.create(mpijob(workers=4))
    await cluster.wait_workers(4)
    patch = {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 2}}}}
    await cluster.kube.patch(MPIJOBS, cluster.ns, "job", patch)
    pods = await cluster.wait_workers(2)
    assert [p["metadata"]["name"] for p in pods] == ["job-worker-0", "job-worker-1"]


async def test_many_workers_are_created_without_duplicates(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    await start_operator()
    await cluster.create(mpijob(workers=40))
    pods = await cluster.wait_workers(40, within=60)
    assert sorted(p["metadata"]["name"] for p in pods) == sorted(
        f"job-worker-{i}" for i in range(40)
    )
