"""A failure-policy restart of a job that Kueue admitted: the restart rebuilds the pods
and the launcher, and writes nothing Kueue reads or owns.

Kueue admits an MPIJob by setting ``spec.runPolicy.suspend`` to false and injecting
its flavour's node selectors into the pod templates; it takes the quota back when the
job is suspended again, when the job's pod sets change (replicas, templates) or when
its queue label goes. So a restart must leave the MPIJob's spec and metadata exactly
as Kueue left them (no spec write at all: ``metadata.generation`` holds), and the new
children must carry the admitted node selectors and run unsuspended. The api shape
has no Job controller and no garbage collector: the test plays both, as the other
integration tests do.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from controller_harness import Cluster, StartOperator, mpijob

from devcluster.polling import eventually
from mpi_operator.client import JOBS, MPIJOBS, PODS

Obj = dict[str, Any]
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
ATTEMPT = "training.kubeflow.org/restart-attempt"


def _kueue_job() -> Obj:
    """As Kueue's webhook leaves it: queue label, created suspended."""
    job = mpijob(
        runPolicy={
            "suspend": True,
            "failurePolicy": {
                "maxRestarts": 1,
                "rules": [
                    {"name": "oom", "action": "RestartJob", "onTerminationReasons": ["OOMKilled"]}
                ],
            },
        }
    )
    job["metadata"]["labels"] = {QUEUE_LABEL: "team-a"}
    return job


async def _admit(cluster: Cluster) -> None:
    """What Kueue's job reconciler does on admission: unsuspend, inject node selectors."""
    selector = {"nodeSelector": {"flavor": "on-demand"}}
    patch = {
        "spec": {
            "runPolicy": {"suspend": False},
            "mpiReplicaSpecs": {
                "Launcher": {"template": {"spec": selector}},
                "Worker": {"template": {"spec": selector}},
            },
        }
    }
    await cluster.kube.patch(MPIJOBS, cluster.ns, "job", patch)


class SpecWatch:
    """Every version of the MPIJob seen by a watch: what Kueue would be told."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.versions: list[Obj] = []
        self.task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            job = await self.cluster.job()
            if (
                not self.versions
                or self.versions[-1]["metadata"]["resourceVersion"]
                != (job["metadata"]["resourceVersion"])
            ):
                self.versions.append(job)
            await asyncio.sleep(0.05)

    def start(self) -> None:
        self.task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


async def _oom(cluster: Cluster, pod: Obj) -> None:
    terminated = {"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2026-01-01T00:00:00Z"}
    await cluster.set_pod_status(
        pod,
        phase="Failed",
        containerStatuses=[
            {
                "name": "main",
                "image": "mpi-pi:latest",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": terminated},
            }
        ],
    )


async def _collect_old_launcher(cluster: Cluster, uid: str) -> None:
    """The garbage collector's part in a foreground deletion: the launcher's pods go,
    then the Job's finalizer."""

    async def deleting() -> bool:
        launcher = await cluster.launcher()
        return launcher is None or bool(launcher["metadata"].get("deletionTimestamp"))

    await eventually(deleting, what="the old launcher Job being deleted")
    for pod in await cluster.list(PODS):
        owners = pod["metadata"].get("ownerReferences") or []
        if any(o["uid"] == uid for o in owners):
            await cluster.kube.delete(PODS, cluster.ns, pod["metadata"]["name"])
    launcher = await cluster.launcher()
    if launcher is not None and launcher["metadata"]["uid"] == uid:
        patch = {"metadata": {"finalizers": None}}
        await cluster.kube.patch(JOBS, cluster.ns, launcher["metadata"]["name"], patch)


async def test_a_restart_leaves_the_kueue_admitted_job_as_kueue_left_it(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    await start_operator()
    await cluster.create(_kueue_job())
    await cluster.wait_condition("Suspended")
    await _admit(cluster)
    workers = await cluster.wait_workers(2)
    admitted = await cluster.job()
    watch = SpecWatch(cluster)
    watch.start()
    try:
        await cluster.set_pods_running(workers, ready=True)
        launcher = await cluster.wait_launcher()

        async def launcher_resumed() -> bool:
            current = await cluster.launcher()
            return current is not None and current["spec"].get("suspend") is False

        await eventually(launcher_resumed, what="the admitted launcher unsuspended")
        launcher = await cluster.wait_launcher()
        await cluster.create_launcher_pod(launcher)
        await cluster.wait_condition("Running")

        await _oom(cluster, workers[0])
        await cluster.wait_event("MPIJobRestarting")
        await _collect_old_launcher(cluster, launcher["metadata"]["uid"])

        async def rebuilt() -> bool:
            current = await cluster.launcher()
            pods = [p for p in await cluster.workers() if p["metadata"]["labels"].get(ATTEMPT)]
            return (
                current is not None
                and current["metadata"]["uid"] != launcher["metadata"]["uid"]
                and len(pods) == 2
            )

        await eventually(rebuilt, what="attempt 1's workers and launcher")
        new_launcher = await cluster.wait_launcher()
        new_workers = await cluster.wait_workers(2)
        # The children of the restart run at once, where Kueue placed the job.
        assert new_launcher["spec"].get("suspend") is False
        assert new_launcher["metadata"]["labels"][ATTEMPT] == "1"
        template = new_launcher["spec"]["template"]["spec"]
        assert template["nodeSelector"] == {"flavor": "on-demand"}
        for pod in new_workers:
            assert pod["spec"]["nodeSelector"] == {"flavor": "on-demand"}
            assert pod["metadata"]["labels"][ATTEMPT] == "1"

        await cluster.set_pods_running(new_workers, ready=True)
        await cluster.create_launcher_pod(new_launcher)
        await cluster.finish_launcher(succeeded=True)
        await cluster.wait_condition("Succeeded")
    finally:
        await watch.stop()
    final = await cluster.job()
    assert final["status"]["restartCount"] == 1
    # No write of the operator touched what Kueue owns or reads: not one version of
    # the MPIJob since admission differs in spec, labels, annotations or generation,
    # so it was never suspended again and its pod sets never changed.
    assert len(watch.versions) > 3
    for version in [*watch.versions, final]:
        assert version["metadata"]["generation"] == admitted["metadata"]["generation"]
        assert version["spec"] == admitted["spec"]
        assert version["metadata"].get("labels") == {QUEUE_LABEL: "team-a"}
        assert version["metadata"].get("annotations") == admitted["metadata"].get("annotations")
        assert version["spec"]["runPolicy"]["suspend"] is False
    seen = {
        c["type"] for v in watch.versions for c in (v.get("status") or {}).get("conditions") or []
    }
    assert "Restarting" in seen
    reasons = [e[1] for e in await cluster.events()]
    assert reasons.count("MPIJobRestarting") == 1
    assert "MPIJobSuspended" in reasons  # only before admission
    assert reasons.count("MPIJobSuspended") == 1
