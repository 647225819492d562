"""Gang scheduling with the Kubernetes Workload API (``--gang-scheduling=workload-api``),
placed by the real kube-scheduler's gang plugin on the full shape's KWOK nodes.

The job's pods are steered to nodes of the test's own (a node selector), whose CPU fits
three of its four pods (three workers and the launcher, one CPU each): as a gang none is
bound until a node for the fourth appears; without gang scheduling three are bound at
once. A restart (a failure policy's RestartJob) places the new pods as a gang again. A
T9k job (its launcher pod and three workers) is placed as a gang the same way.

Every such PodGroup carries kube-apiserver's ``scheduling.k8s.io/podgroup-protection``
finalizer, which kube-controller-manager's podgroup-protection-controller removes once no
pod that is neither Succeeded nor Failed names the group: the last tests prove that a
PodGroup deleted with its job, or by cleanPodPolicy, is gone once its pods are, and that
a job of the same name gets a PodGroup of its own.

The T9k CRD is installed for the whole module, before its first test: see
:func:`t9k_crd`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from controller_harness import Cluster, mpijob
from harness import api_client, controllers

from devcluster import components
from devcluster.crds import crds_installed
from devcluster.polling import eventually
from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.client import MPIJOBS, PODS, KubeClient, Resource
from mpi_operator.client.kubeapi import POD_GROUPS_WORKLOAD_API
from mpi_operator.controller.kubeflow.controller import MPIJobController
from mpi_operator.controller.t9k import T9kMPIJobController
from mpi_operator.controller.t9k.context import T9K_MPIJOBS

Obj = dict[str, Any]
ATTEMPT = "training.kubeflow.org/restart-attempt"
T9K_CRD = Path(__file__).resolve().parents[3] / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)


@pytest.fixture(scope="module", autouse=True)
def t9k_crd(full_cluster: Any) -> Iterator[None]:
    """The T9k CRD, from the module's first test to its end (the Kubeflow tests here
    use no kubectl, for which ``mpijob`` would then be ambiguous).

    Installed this early for kube-controller-manager's garbage collector, which looks
    for new resources every 30 s (a period it hard-codes). Until it watches T9k
    MPIJobs it knows a T9k job only as the unobserved owner of its pods, whose
    existence it checks again with an exponential backoff: a T9k job deleted within
    that window had its pods and PodGroup collected up to 40 s late (44 s for the
    test). The tests before it give the collector that time; the test that deletes a
    T9k job still waits for the watch first (:func:`_gc_watches_t9k_jobs`)."""
    with crds_installed(full_cluster, (T9K_CRD,)):
        yield


def _t9k_job_watches(full_cluster: Any) -> int:
    """The open watches of T9k MPIJobs (kube-apiserver's gauge)."""
    status, text = full_cluster.request("GET", "/metrics")
    assert status == 200, text
    found = 0
    for line in str(text).splitlines():
        if (
            line.startswith("apiserver_longrunning_requests{")
            and 'group="batch.tensorstack.dev"' in line
            and 'resource="mpijobs"' in line
            and 'verb="WATCH"' in line
        ):
            found += int(float(line.rsplit(" ", 1)[1]))
    return found


async def _gc_watches_t9k_jobs(full_cluster: Any) -> None:
    """Before a T9k controller runs, the only watch of T9k MPIJobs is the garbage
    collector's: it then sees a T9k job's deletion when it happens."""

    async def watched() -> bool:
        return await asyncio.to_thread(_t9k_job_watches, full_cluster) > 0

    await eventually(watched, within=90, interval=0.5, what="the garbage collector's watch")


@pytest.fixture
async def kube(full_cluster: Any) -> AsyncIterator[KubeClient]:
    async with api_client(full_cluster) as client:
        yield client


@pytest.fixture
def cluster(kube: KubeClient, full_namespace: str) -> Cluster:
    return Cluster(kube, full_namespace)


@pytest.fixture
def nodes(full_cluster: Any, full_namespace: str) -> Iterator[list[str]]:
    """Names of the fake nodes a test adds (deleted afterwards)."""
    made: list[str] = []
    yield made
    for name in made:
        full_cluster.request("DELETE", f"/api/v1/nodes/{name}")


def _add_node(full_cluster: Any, nodes: list[str], ns: str, cpu: str) -> None:
    node = components.fake_node(f"{ns}-{len(nodes)}")
    node["metadata"]["labels"]["gang-test"] = ns
    capacity = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    node["status"] = {"capacity": capacity, "allocatable": capacity}
    full_cluster.ensure(node)
    nodes.append(node["metadata"]["name"])


def _job(ns: str, **run_policy: Any) -> Obj:
    def template(annotations: Obj | None = None) -> Obj:
        container = {"name": "main", "image": "x", "resources": {"requests": {"cpu": "1"}}}
        return {
            "metadata": {"annotations": annotations or {}},
            "spec": {"nodeSelector": {"gang-test": ns}, "containers": [container]},
        }

    worker_annotations = run_policy.pop("worker_annotations", None)
    return mpijob(
        workers=3,
        worker_template=template(worker_annotations),
        launcher_template=template(),
        runPolicy={"cleanPodPolicy": "All", **run_policy},
    )


async def _pods(cluster: Cluster, attempt: str | None = None) -> list[Obj]:
    pods = [p for p in await cluster.list(PODS) if not p["metadata"].get("deletionTimestamp")]
    return [p for p in pods if p["metadata"].get("labels", {}).get(ATTEMPT) == attempt]


async def _bound(cluster: Cluster, attempt: str | None = None) -> int:
    return sum(1 for p in await _pods(cluster, attempt) if p["spec"].get("nodeName"))


async def _none_bound_while(cluster: Cluster, seconds: float, attempt: str | None = None) -> None:
    """All four pods exist, and for ``seconds`` none of them is bound."""

    async def four() -> bool:
        return len(await _pods(cluster, attempt)) == 4

    await eventually(four, within=30, what="the job's four pods")
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        assert await _bound(cluster, attempt) == 0, "a pod of an incomplete gang was bound"
        await asyncio.sleep(0.5)


async def _all_bound(cluster: Cluster, attempt: str | None = None) -> None:
    async def four() -> bool:
        return await _bound(cluster, attempt) == 4

    await eventually(four, within=60, what="all four pods bound")


async def test_a_gang_is_bound_only_when_all_of_it_fits(
    full_cluster: Any, full_namespace: str, cluster: Cluster, nodes: list[str]
) -> None:
    ns = full_namespace
    _add_node(full_cluster, nodes, ns, cpu="3")
    async with controllers(full_cluster, ns, MPIJobController) as start:
        await start(gang=GangScheduling.workload_api())
        await cluster.create(_job(ns))
        await _none_bound_while(cluster, 5)
        (group,) = await cluster.list(POD_GROUPS_WORKLOAD_API)
        assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
        assert group["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"
        for pod in await _pods(cluster):
            assert pod["spec"]["schedulingGroup"] == {"podGroupName": "job"}
        _add_node(full_cluster, nodes, ns, cpu="1")
        await _all_bound(cluster)


async def test_without_gang_scheduling_three_of_four_are_bound(
    full_cluster: Any, full_namespace: str, cluster: Cluster, nodes: list[str]
) -> None:
    ns = full_namespace
    _add_node(full_cluster, nodes, ns, cpu="3")
    async with controllers(full_cluster, ns, MPIJobController) as start:
        await start()
        await cluster.create(_job(ns))

        async def three() -> bool:
            return await _bound(cluster) == 3

        await eventually(three, within=30, what="three pods bound")
        assert len(await _pods(cluster)) == 4


async def test_a_restart_places_the_new_pods_as_a_gang(
    full_cluster: Any, full_namespace: str, cluster: Cluster, nodes: list[str]
) -> None:
    ns = full_namespace
    _add_node(full_cluster, nodes, ns, cpu="3")
    _add_node(full_cluster, nodes, ns, cpu="1")
    fail_later = {"kwok.mpi-operator.io/fail-first-run-after": "6s"}
    job = _job(ns, failurePolicy={"maxRestarts": 1}, worker_annotations=fail_later)
    async with controllers(full_cluster, ns, MPIJobController) as start:
        await start(gang=GangScheduling.workload_api())
        await cluster.create(job)
        await _all_bound(cluster)
        # Room for three pods only, from now on: the restart's gang must wait.
        await cluster.kube.patch(NODES, None, nodes[1], {"spec": {"unschedulable": True}})
        await cluster.wait_event("MPIJobRestarting", within=30)
        await _none_bound_while(cluster, 5, attempt="1")
        await cluster.kube.patch(NODES, None, nodes[1], {"spec": {"unschedulable": False}})
        await _all_bound(cluster, attempt="1")


def _t9k_job(ns: str) -> Obj:
    container = {"name": "mpi-worker", "image": "x", "resources": {"requests": {"cpu": "1"}}}
    template = {"spec": {"nodeSelector": {"gang-test": ns}, "containers": [container]}}
    worker = {"replicas": 3, "cmd": ["./pi"], "template": template}
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": "job"},
        "spec": {"worker": worker},
    }


async def test_a_t9k_jobs_gang_is_bound_only_when_all_of_it_fits(
    full_cluster: Any, full_namespace: str, cluster: Cluster, nodes: list[str]
) -> None:
    ns = full_namespace
    _add_node(full_cluster, nodes, ns, cpu="3")
    async with controllers(full_cluster, ns, T9kMPIJobController) as start:
        await start(gang=GangScheduling.workload_api())
        await cluster.kube.create(T9K_MPIJOBS, ns, _t9k_job(ns))
        await _none_bound_while(cluster, 5)
        (group,) = await cluster.list(POD_GROUPS_WORKLOAD_API)
        assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
        assert group["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"
        assert group["metadata"]["ownerReferences"][0]["apiVersion"].startswith("batch.")
        for pod in await _pods(cluster):
            assert pod["spec"]["schedulingGroup"] == {"podGroupName": "job"}
        _add_node(full_cluster, nodes, ns, cpu="1")
        await _all_bound(cluster)


# ------------------------ PodGroups that go ------------------------


async def _gone(kube: KubeClient, resource: Resource, ns: str, name: str, within: float) -> None:
    """``name`` is no longer there (a PodGroup kept by its finalizer is still there)."""

    async def check() -> bool:
        items = (await kube.list(resource, ns))["items"]
        return all(i["metadata"]["name"] != name for i in items)

    await eventually(check, within=within, what=f"{resource.plural} {name} gone")


async def _group_owned_by(cluster: Cluster, uid: str) -> Obj:
    group: Obj = {}

    async def check() -> bool:
        for g in await cluster.list(POD_GROUPS_WORKLOAD_API):
            if g["metadata"]["ownerReferences"][0]["uid"] == uid:
                group.update(g)
                return True
        return False

    await eventually(check, within=30, what="a PodGroup owned by the new job")
    return group


async def test_a_deleted_jobs_pod_group_goes_once_its_pods_are_gone(
    full_cluster: Any, full_namespace: str, cluster: Cluster, nodes: list[str]
) -> None:
    ns = full_namespace
    _add_node(full_cluster, nodes, ns, cpu="4")
    async with controllers(full_cluster, ns, MPIJobController) as start:
        await start(gang=GangScheduling.workload_api())
        await cluster.create(_job(ns))
        await _all_bound(cluster)
        (group,) = await cluster.list(POD_GROUPS_WORKLOAD_API)
        assert "scheduling.k8s.io/podgroup-protection" in group["metadata"]["finalizers"]
        await cluster.kube.delete(MPIJOBS, ns, "job")
        await _gone(cluster.kube, PODS, ns, "job-worker-0", within=60)
        await _gone(cluster.kube, POD_GROUPS_WORKLOAD_API, ns, "job", within=30)


async def test_a_job_recreated_with_the_same_name_gets_its_own_pod_group(
    full_cluster: Any, full_namespace: str, cluster: Cluster, nodes: list[str]
) -> None:
    """Re-created as soon as the old MPIJob is gone, while its PodGroup and pods are
    still terminating: the new job waits for them, then runs as a gang."""
    ns = full_namespace
    _add_node(full_cluster, nodes, ns, cpu="4")
    async with controllers(full_cluster, ns, MPIJobController) as start:
        await start(gang=GangScheduling.workload_api())
        await cluster.create(_job(ns))
        await _all_bound(cluster)
        await cluster.kube.delete(MPIJOBS, ns, "job")
        await _gone(cluster.kube, MPIJOBS, ns, "job", within=30)
        new = await cluster.create(_job(ns))
        group = await _group_owned_by(cluster, new["metadata"]["uid"])
        assert not group["metadata"].get("deletionTimestamp")
        await _all_bound(cluster)
        for pod in await _pods(cluster):
            assert pod["spec"]["schedulingGroup"] == {"podGroupName": "job"}
        for worker in await cluster.workers():
            assert worker["metadata"]["ownerReferences"][0]["uid"] == new["metadata"]["uid"]
        await cluster.wait_condition("Running", within=30)


@pytest.mark.parametrize("policy", ["All", "Running"])
async def test_clean_up_deletes_the_pod_group_and_it_goes(
    full_cluster: Any, full_namespace: str, cluster: Cluster, nodes: list[str], policy: str
) -> None:
    """A finished job's clean-up deletes its workers and its PodGroup (as the reference
    does its Volcano one); the group goes at once, the launcher pod being Succeeded."""
    ns = full_namespace
    _add_node(full_cluster, nodes, ns, cpu="4")
    job = _job(ns, cleanPodPolicy=policy)
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    launcher["metadata"]["annotations"] = {"kwok.mpi-operator.io/complete-after": "2s"}
    async with controllers(full_cluster, ns, MPIJobController) as start:
        await start(gang=GangScheduling.workload_api())
        await cluster.create(job)
        await cluster.wait_condition("Succeeded", within=60)
        await _gone(cluster.kube, POD_GROUPS_WORKLOAD_API, ns, "job", within=30)
        assert await cluster.job()  # the job stays, its PodGroup does not


async def test_a_deleted_t9k_jobs_pod_group_goes_once_its_pods_are_gone(
    full_cluster: Any, full_namespace: str, cluster: Cluster, nodes: list[str]
) -> None:
    ns = full_namespace
    _add_node(full_cluster, nodes, ns, cpu="4")
    await _gc_watches_t9k_jobs(full_cluster)
    async with controllers(full_cluster, ns, T9kMPIJobController) as start:
        await start(gang=GangScheduling.workload_api())
        await cluster.kube.create(T9K_MPIJOBS, ns, _t9k_job(ns))
        await _all_bound(cluster)
        await cluster.kube.delete(T9K_MPIJOBS, ns, "job")
        await _gone(cluster.kube, PODS, ns, "job-worker-0", within=60)
        await _gone(cluster.kube, POD_GROUPS_WORKLOAD_API, ns, "job", within=30)
