"""Suspend and resume, as Kueue drives them."""

from __future__ import annotations

from controller_harness import Cluster, StartOperator, mpijob

from devcluster.polling import eventually
from mpi_operator.client import JOBS, MPIJOBS


async def set_suspend(cluster: Cluster, suspend: bool, **launcher_spec: object) -> None:
    # A merge patch, as kubectl would send: no conflict with concurrent status writes.
    patch = {
        "spec": {
            "runPolicy": {"suspend": suspend},
            "mpiReplicaSpecs": {"Launcher": {"template": {"spec": launcher_spec}}},
        }
    }
    await cluster.kube.patch(MPIJOBS, cluster.ns, "job", patch)


async def test_created_suspended_then_resumed(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    await start_operator()
    await cluster.create(mpijob(runPolicy={"suspend": True}))
    await cluster.wait_condition("Suspended")
    launcher = await cluster.wait_launcher()
    assert launcher["spec"]["suspend"] is True
    assert await cluster.workers() == []
    job = await cluster.job()
    assert "startTime" not in job["status"]
    assert (await cluster.conditions())["Running"] == ("False", "MPIJobSuspended")
    await cluster.wait_event("MPIJobSuspended")

    await set_suspend(
        cluster,
        False,
        nodeSelector={"zone": "a"},
        schedulingGates=[{"name": "kueue.x-k8s.io/admission"}],
    )
    await cluster.wait_condition("Suspended", "False")
    await cluster.wait_workers(2)

    async def launcher_resumed() -> bool:
        launcher = await cluster.launcher()
        assert launcher is not None
        spec = launcher["spec"]["template"]["spec"]
        return launcher["spec"].get("suspend") is False and spec.get("nodeSelector") == {
            "zone": "a"
        }

    await eventually(launcher_resumed, what="launcher unsuspended with the new nodeSelector")
    assert (await cluster.conditions())["Suspended"] == ("False", "MPIJobResumed")
    assert (await cluster.job())["status"]["startTime"]
    await cluster.wait_event("MPIJobResumed")


async def test_suspend_while_running_then_resume_clears_launcher_start_time(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    await start_operator()
    await cluster.create(mpijob())
    workers = await cluster.wait_workers(2)
    launcher = await cluster.wait_launcher()
    await cluster.set_pods_running(workers)
    launcher["status"] = {"startTime": "2026-01-01T00:00:00Z", "active": 1}
    await cluster.kube.replace_status(JOBS, cluster.ns, "job-launcher", launcher)

    await set_suspend(cluster, True)
    await cluster.wait_condition("Suspended")
    await cluster.wait_workers(0)

    async def launcher_suspended() -> bool:
        launcher = await cluster.launcher()
        return launcher is not None and launcher["spec"].get("suspend") is True

    await eventually(launcher_suspended, what="launcher suspended")
    # Play the Job controller: a suspended Job's pods are gone and it says so.
    launcher = await cluster.wait_launcher()
    launcher["status"] = {
        "startTime": launcher["status"]["startTime"],
        "conditions": [{"type": "Suspended", "status": "True", "reason": "JobSuspended"}],
    }
    await cluster.kube.replace_status(JOBS, cluster.ns, "job-launcher", launcher)
    await cluster.wait_replicas({"Launcher": {}, "Worker": {}})

    await set_suspend(cluster, False, tolerations=[{"key": "gpu", "operator": "Exists"}])
    await cluster.wait_condition("Suspended", "False")

    async def resumed() -> bool:
        launcher = await cluster.launcher()
        assert launcher is not None
        return (
            launcher["spec"].get("suspend") is False
            and "startTime" not in (launcher.get("status") or {})
            and launcher["spec"]["template"]["spec"].get("tolerations")
            == [{"key": "gpu", "operator": "Exists"}]
        )

    await eventually(resumed, what="launcher resumed with cleared startTime and new tolerations")
    await cluster.wait_workers(2)
