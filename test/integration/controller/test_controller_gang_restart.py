"""A RestartFailed restart of a gang-scheduled job (``--gang-scheduling=workload-api``),
placed by the real kube-scheduler's gang plugin on the full shape's KWOK nodes.

The job has two workers and a launcher: a Workload API PodGroup of ``minCount`` 3 (the
workers + 1, the launcher counted). KWOK runs them; one worker then fails (KWOK fails it
with exit 1) and the failure policy's RestartFailed rule replaces that worker and the
launcher Job while the healthy worker runs on. The restart must end: the replacement
worker and the new launcher's pod bound, the MPIJob Running again with ``restartCount``
1 and the healthy worker the very pod it was (its uid).

Two things leave in a restart, the failed worker and the old launcher's pod (deleted
with its Job, foreground), and each test forces one order by holding the other pod's
deletion with a finalizer of the test's own, added before the failure and removed once
the first has left:

* the failed worker first: the old launcher's pod is held, so the old launcher Job
  stays (a foreground deletion waits for its pods); the replacement worker is created
  while it stays, and the new launcher only once it is gone;
* the old launcher first: the failed worker is held (Terminating); nothing new is
  created while it stays, then the replacement and the new launcher come together.

Everything is read from the API server.
"""

from __future__ import annotations

from typing import Any

from controller_harness import Cluster, mpijob
from harness import controllers
from kwok_support import (  # noqa: F401 (fixtures)
    attempt,
    hold,
    holds_for,
    kwok_cluster_fixture,
    kwok_fail,
    kwok_kube_fixture,
    launcher_job_gone,
    launcher_job_of_attempt,
    launcher_pods,
    live,
    release,
    running_again,
    wait_launcher_pod,
    wait_phase,
)

from devcluster.polling import eventually
from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.client import PODS
from mpi_operator.client.kubeapi import POD_GROUPS_WORKLOAD_API
from mpi_operator.controller.kubeflow.controller import MPIJobController

Obj = dict[str, Any]


def _job() -> Obj:
    policy = {"maxRestarts": 1, "rules": [{"name": "failed", "action": "RestartFailed"}]}
    return mpijob(
        workers=2,
        runPolicy={"cleanPodPolicy": "Running", "failurePolicy": policy},
    )


async def _running_first_run(cluster: Cluster) -> tuple[Obj, Obj, Obj]:
    """Waits for the first run to be Running; returns its workers and launcher pod."""
    await cluster.wait_condition("Running", within=60)
    workers = live(await cluster.workers())
    assert len(workers) == 2
    assert all(w["spec"].get("nodeName") for w in workers)
    launcher_pod = await wait_launcher_pod(cluster, None)
    assert launcher_pod["spec"].get("nodeName")
    (group,) = await cluster.list(POD_GROUPS_WORKLOAD_API)
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    return workers[0], workers[1], launcher_pod


async def _replacement(cluster: Cluster) -> Obj | None:
    for pod in live(await cluster.workers()):
        if pod["metadata"]["name"] == "job-worker-1" and attempt(pod) == "1":
            return pod
    return None


async def _ends_running_again(cluster: Cluster, healthy: Obj) -> None:
    """The restart's end: replacement and new launcher bound, Running, restartCount 1,
    the healthy worker kept."""

    async def done() -> bool:
        return await running_again(cluster)

    await eventually(done, within=60, interval=0.2, what="the MPIJob Running again")
    new_launcher = await wait_launcher_pod(cluster, "1")
    assert new_launcher["spec"].get("nodeName"), new_launcher
    assert new_launcher["spec"]["schedulingGroup"] == {"podGroupName": "job"}
    replacement = await _replacement(cluster)
    assert replacement is not None
    assert replacement["spec"].get("nodeName"), replacement
    assert replacement["status"]["phase"] == "Running"
    workers = {w["metadata"]["name"]: w for w in live(await cluster.workers())}
    assert set(workers) == {"job-worker-0", "job-worker-1"}
    kept = workers["job-worker-0"]
    assert kept["metadata"]["uid"] == healthy["metadata"]["uid"]
    assert attempt(kept) is None
    assert (await cluster.job())["status"]["restartCount"] == 1
    events = [e[1] for e in await cluster.events()]
    assert events.count("MPIJobRestartingFailed") == 1, events
    # The group is the job's first one: kept through the restart.
    (group,) = await cluster.list(POD_GROUPS_WORKLOAD_API)
    assert not group["metadata"].get("deletionTimestamp")


async def test_gang_restart_failed_when_the_failed_worker_leaves_first(
    full_cluster: Any, full_namespace: str, cluster: Cluster
) -> None:
    async with controllers(full_cluster, full_namespace, MPIJobController) as start:
        await start(gang=GangScheduling.workload_api())
        await cluster.create(_job())
        healthy, failing, old_launcher_pod = await _running_first_run(cluster)
        old_launcher = await cluster.wait_launcher()
        launcher_pod = old_launcher_pod["metadata"]["name"]
        await hold(cluster, launcher_pod)
        await kwok_fail(cluster, failing)
        await cluster.wait_event("MPIJobRestartingFailed", within=20)

        async def replaced() -> bool:
            return await _replacement(cluster) is not None

        # The failed worker went; its replacement is made while the old launcher's pod
        # (held) keeps the old launcher Job.
        await eventually(replaced, within=20, interval=0.1, what="the replacement worker")
        held = await cluster.kube.get(PODS, cluster.ns, launcher_pod)
        assert held["metadata"].get("deletionTimestamp"), "the old launcher pod was not deleted"
        launcher = await cluster.launcher()
        assert launcher is not None
        assert launcher["metadata"]["uid"] == old_launcher["metadata"]["uid"]
        assert launcher["metadata"].get("deletionTimestamp")

        await release(cluster, launcher_pod)

        async def old_gone() -> bool:
            return await launcher_job_gone(cluster, old_launcher["metadata"]["uid"])

        await eventually(old_gone, within=30, interval=0.1, what="the old launcher Job gone")

        async def new_launcher() -> bool:
            return await launcher_job_of_attempt(cluster, "1") is not None

        await eventually(new_launcher, within=30, interval=0.1, what="the new launcher Job")
        await _ends_running_again(cluster, healthy)


async def test_gang_restart_failed_when_the_old_launcher_leaves_first(
    full_cluster: Any, full_namespace: str, cluster: Cluster
) -> None:
    async with controllers(full_cluster, full_namespace, MPIJobController) as start:
        await start(gang=GangScheduling.workload_api())
        await cluster.create(_job())
        healthy, failing, _ = await _running_first_run(cluster)
        old_launcher = await cluster.wait_launcher()
        failing_name = failing["metadata"]["name"]
        await hold(cluster, failing_name)
        await kwok_fail(cluster, failing)
        await wait_phase(cluster, failing_name, "Failed")
        await cluster.wait_event("MPIJobRestartingFailed", within=20)

        async def old_gone() -> bool:
            return await launcher_job_gone(cluster, old_launcher["metadata"]["uid"])

        # The old launcher Job (and its pod) went; the failed worker is held.
        await eventually(old_gone, within=30, interval=0.1, what="the old launcher Job gone")
        assert not live(await launcher_pods(cluster))
        held = await cluster.kube.get(PODS, cluster.ns, failing_name)
        assert held["metadata"]["uid"] == failing["metadata"]["uid"]
        assert held["metadata"].get("deletionTimestamp"), "the failed worker was not deleted"

        async def nothing_new() -> bool:
            return await cluster.launcher() is None and await _replacement(cluster) is None

        # Nothing new while the failed worker stays.
        await holds_for(nothing_new, 1.5, "no launcher Job or replacement before it left")

        await release(cluster, failing_name)
        await _ends_running_again(cluster, healthy)
