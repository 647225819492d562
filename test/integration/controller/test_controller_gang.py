"""Gang scheduling: volcano and scheduler-plugins PodGroups."""

from __future__ import annotations

import uuid

from controller_harness import Cluster, StartOperator, mpijob

from devcluster.polling import eventually
from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.client.kubeapi import (
    POD_GROUPS_SCHEDULER_PLUGINS,
    POD_GROUPS_VOLCANO,
    PRIORITY_CLASSES,
)


def resources(cpu: str, memory: str) -> dict[str, object]:
    return {"requests": {"cpu": cpu, "memory": memory}}


async def test_volcano_pod_group_with_priority_class_min_resources(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    high, low = f"high-{uuid.uuid4().hex[:6]}", f"low-{uuid.uuid4().hex[:6]}"
    for name, value in ((high, 1000), (low, 10)):
        await cluster.kube.create(
            PRIORITY_CLASSES,
            None,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
    try:
        await start_operator(gang=GangScheduling.volcano())
        job = mpijob(
            workers=3,
            runPolicy={
                "cleanPodPolicy": "All",
                "schedulingPolicy": {"minAvailable": 3, "queue": "research"},
            },
            launcher_template={
                "spec": {
                    "priorityClassName": low,
                    "containers": [{"name": "l", "image": "x", "resources": resources("1", "1Gi")}],
                }
            },
            worker_template={
                "spec": {
                    "priorityClassName": high,
                    "containers": [{"name": "w", "image": "x", "resources": resources("2", "2Gi")}],
                }
            },
        )
        await cluster.create(job)
        workers = await cluster.wait_workers(3)
        groups: list[dict[str, object]] = []

        async def pod_group() -> bool:
            groups[:] = await cluster.list(POD_GROUPS_VOLCANO)
            return bool(groups)

        await eventually(pod_group, what="volcano PodGroup")
        spec = groups[0]["spec"]
        # As upstream: the lower-priority replica (the launcher) is counted
        # minMember-1 times, all three workers in full: 3x(2, 2Gi) + 2x(1, 1Gi).
        assert spec == {
            "minMember": 3,
            "queue": "research",
            "priorityClassName": low,
            "minResources": {"cpu": "8", "memory": "8Gi"},
        }
        pod = workers[0]
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "job"

        await cluster.finish_launcher(succeeded=True)
        await cluster.wait_condition("Succeeded")
        await cluster.wait_workers(0)

        async def removed() -> bool:
            return await cluster.list(POD_GROUPS_VOLCANO) == []

        await eventually(removed, what="PodGroup removed at cleanup")
    finally:
        for name in (high, low):
            await cluster.kube.delete(PRIORITY_CLASSES, None, name)


async def test_scheduler_plugins_pod_group(cluster: Cluster, start_operator: StartOperator) -> None:
    await start_operator(gang=GangScheduling.scheduler_plugins("sp-scheduler"))
    await cluster.create(
        mpijob(workers=2, runPolicy={"schedulingPolicy": {"scheduleTimeoutSeconds": 90}})
    )
    workers = await cluster.wait_workers(2)
    groups: list[dict[str, object]] = []

    async def pod_group() -> bool:
        groups[:] = await cluster.list(POD_GROUPS_SCHEDULER_PLUGINS)
        return bool(groups)

    await eventually(pod_group, what="scheduler-plugins PodGroup")
    assert groups[0]["spec"] == {"minMember": 3, "scheduleTimeoutSeconds": 90}
    assert workers[0]["spec"]["schedulerName"] == "sp-scheduler"
    assert workers[0]["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "job"
    launcher = await cluster.wait_launcher()
    assert launcher["spec"]["template"]["spec"]["schedulerName"] == "sp-scheduler"
