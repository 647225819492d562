"""Harness of the Kueue suite: a full local cluster of its own (KWOK nodes) with the real
Kueue running beside it on the host (``devcluster.kueue``), our operator in-process per
test watching the test's namespace, and helpers to make Kueue's objects and read what
Kueue and the operator did. (A unique module name: several test folders have a
conftest.py.)

The cluster is the suite's own, not the session's ``full_cluster``: Kueue's webhooks and
CRDs, and the tainted nodes the flavor tests add, never touch the other suites.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from harness import api_client, controllers
from kueue_checks import (
    Obj,
    condition,
    holds,
    is_launcher,
    is_true,
    job_condition,
    phase,
    podsets,
    queued_mpijob,
    suspended,
)
from reference_operator import reference_operators, reference_under_test

from devcluster import COMPLETE_AFTER, FULL, BinariesMissingError, ClusterError, LocalCluster
from devcluster import kueue as kueue_mod
from devcluster.components import fake_node
from devcluster.kueue import KUEUE_API, Kueue
from devcluster.polling import eventually
from mpi_operator.client import EVENTS, JOBS, MPIJOBS, PODS, KubeClient, Resource
from mpi_operator.client.errors import ApiError, is_not_found
from mpi_operator.controller.kubeflow.controller import MPIJobController

__all__ = [
    "WORKLOADS",
    "KueueEnv",
    "KueueObjects",
    "StartOperator",
    "condition",
    "holds",
    "is_true",
    "job_condition",
    "podsets",
    "queued_mpijob",
    "suspended",
]

StartOperator = Callable[..., Awaitable[MPIJobController | None]]

RESOURCE_FLAVORS = Resource("kueue.x-k8s.io", "v1beta2", "resourceflavors", "ResourceFlavor", False)
CLUSTER_QUEUES = Resource("kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue", False)
LOCAL_QUEUES = Resource("kueue.x-k8s.io", "v1beta2", "localqueues", "LocalQueue")
WORKLOADS = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
PRIORITY_CLASSES = Resource(
    "kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", "WorkloadPriorityClass", False
)
NODES = Resource("", "v1", "nodes", "Node", False)
JOB_NAME = "training.kubeflow.org/job-name"
JOB_ROLE = "training.kubeflow.org/job-role"


#: The suite's Kueue: waitForPodsReady on, so that each admitted Workload says PodsReady
#: once the MPIJob is Running (the tests assert it); the timeout never evicts here.
KUEUE_OPTIONS: dict[str, Any] = {"pods_ready_timeout": "5m"}


class KueueEnv:
    """The suite's cluster and the Kueue serving it."""

    def __init__(self, cluster: LocalCluster, kueue: Kueue) -> None:
        self.cluster = cluster
        self.kueue = kueue
        self._starts = 0

    def restart_kueue(self, **options: Any) -> Kueue:
        """Replaces the running Kueue by one with ``options`` (:class:`Kueue`'s; none:
        :data:`KUEUE_OPTIONS`), on the same cluster, CRDs and objects."""
        self.kueue.stop()
        self._starts += 1
        workdir = self.cluster.workdir / f"kueue-{self._starts}"
        kueue = Kueue(self.cluster, workdir, files=self.kueue.files, **(options or KUEUE_OPTIONS))
        self.kueue = kueue
        kueue.start()
        return kueue


@pytest.fixture(scope="package")
def kueue_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KueueEnv]:
    cluster = LocalCluster(tmp_path_factory.mktemp("kueue-cluster"), FULL, nodes=2)
    try:
        _ = cluster.bins
        files = kueue_mod.find()
    except (BinariesMissingError, ClusterError) as e:
        pytest.fail(f"the Kueue suite cannot start here: {e}", pytrace=False)
    cluster.start()
    env = KueueEnv(cluster, Kueue(cluster, cluster.workdir / "kueue", files=files, **KUEUE_OPTIONS))
    try:
        env.kueue.start()
        yield env
    finally:
        env.kueue.stop()
        cluster.stop()


def _prefix(request: pytest.FixtureRequest) -> str:
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")
    return name.removeprefix("test-")[:30].strip("-") or "test"


@pytest.fixture
def kns(kueue_env: KueueEnv, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace in the suite's cluster (Kueue checked alive first)."""
    if not kueue_env.kueue.alive():
        pytest.fail(f"Kueue is not running\n{kueue_env.kueue.tail()}", pytrace=False)
    name = kueue_env.cluster.create_namespace(_prefix(request))
    yield name
    kueue_env.cluster.delete_namespace(name)


@pytest.fixture
async def kube(kueue_env: KueueEnv) -> AsyncIterator[KubeClient]:
    """The test's own client of the suite's cluster."""
    async with api_client(kueue_env.cluster) as client:
        yield client


@pytest.fixture
async def start_operator(
    kueue_env: KueueEnv, kns: str, tmp_path: Path
) -> AsyncIterator[StartOperator]:
    """Our operator, or with MPI_OPERATOR_UNDER_TEST=reference the reference's."""
    if reference_under_test():
        async with reference_operators(kueue_env.cluster, kns, tmp_path) as start_reference:
            yield start_reference
        return
    async with controllers(kueue_env.cluster, kns, MPIJobController) as start:
        yield start


@pytest.fixture
async def kq(kube: KubeClient, kns: str, kueue_env: KueueEnv) -> AsyncIterator[KueueObjects]:
    objects = KueueObjects(kube, kns)
    try:
        yield objects
    finally:
        await objects.delete_cluster_scoped()
        if not kueue_env.kueue.alive():
            pytest.fail(f"Kueue died during the test\n{kueue_env.kueue.tail()}", pytrace=False)


class KueueObjects:
    """Kueue's objects and the MPIJobs of one test namespace; cluster-scoped objects the
    test makes are deleted afterwards."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self.kube = kube
        self.ns = namespace
        self._cluster_scoped: list[tuple[Resource, str]] = []

    def name(self, base: str) -> str:
        """A cluster-wide unique name for this test's ``base``."""
        return f"{base}-{self.ns}"[:63].rstrip("-")

    async def _create_cluster_scoped(self, resource: Resource, obj: Obj) -> Obj:
        created: Obj = await self.kube.create(resource, None, obj)
        self._cluster_scoped.append((resource, obj["metadata"]["name"]))
        return created

    async def delete_cluster_scoped(self) -> None:
        for resource, name in reversed(self._cluster_scoped):
            try:
                await self.kube.delete(resource, None, name)
            except ApiError as e:
                if not is_not_found(e):
                    raise
        self._cluster_scoped.clear()

    # -- Kueue's objects

    async def flavor(self, base: str, **spec: Any) -> str:
        name = self.name(base)
        obj = {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": name}}
        obj["spec"] = spec
        await self._create_cluster_scoped(RESOURCE_FLAVORS, obj)
        return name

    async def cluster_queue(
        self,
        base: str,
        flavor: str,
        cpu: str,
        preemption: Obj | None = None,
        more_flavors: Sequence[str] = (),
    ) -> str:
        """A ClusterQueue for every namespace with ``cpu`` of quota in ``flavor`` (and as
        much in each of ``more_flavors``, tried in that order)."""
        name = self.name(base)
        spec: Obj = {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": f, "resources": [{"name": "cpu", "nominalQuota": cpu}]}
                        for f in (flavor, *more_flavors)
                    ],
                }
            ],
        }
        if preemption:
            spec["preemption"] = preemption
        obj = {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": name}}
        obj["spec"] = spec
        await self._create_cluster_scoped(CLUSTER_QUEUES, obj)
        return name

    async def local_queue(self, name: str, cluster_queue: str) -> str:
        obj = {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": {"name": name},
            "spec": {"clusterQueue": cluster_queue},
        }
        await self.kube.create(LOCAL_QUEUES, self.ns, obj)

        async def active() -> bool:
            lq = await self.kube.get(LOCAL_QUEUES, self.ns, name)
            cq = await self.kube.get(CLUSTER_QUEUES, None, cluster_queue)
            return is_true(lq, "Active") and is_true(cq, "Active")

        await eventually(active, within=30, interval=0.2, what=f"LocalQueue {name} Active")
        return name

    async def priority_class(self, base: str, value: int) -> str:
        name = self.name(base)
        obj = {
            "apiVersion": KUEUE_API,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        await self._create_cluster_scoped(PRIORITY_CLASSES, obj)
        return name

    async def node(self, base: str, labels: dict[str, str], taints: list[Obj]) -> str:
        """A KWOK node of the cluster with ``labels`` and ``taints``, Ready."""
        name = self.name(base)
        node = fake_node(name)
        node["metadata"]["labels"].update(labels)
        node["spec"] = {"taints": taints}
        await self._create_cluster_scoped(NODES, node)

        async def ready() -> bool:
            return is_true(await self.kube.get(NODES, None, name), "Ready")

        await eventually(ready, within=30, interval=0.2, what=f"node {name} Ready")
        return name

    async def workload(self, job: str) -> Obj | None:
        """The Workload Kueue made for MPIJob ``job`` (owned by it)."""
        for wl in (await self.kube.list(WORKLOADS, self.ns))["items"]:
            for ref in wl["metadata"].get("ownerReferences") or []:
                if ref.get("kind") == "MPIJob" and ref.get("name") == job:
                    return dict(wl)
        return None

    async def wait_workload(
        self, job: str, check: Callable[[Obj], bool], what: str, within: float = 60
    ) -> Obj:
        found: list[Obj] = []

        async def ok() -> bool:
            wl = await self.workload(job)
            found[:] = [wl] if wl is not None and check(wl) else []
            return bool(found)

        await eventually(ok, within=within, interval=0.2, what=f"{job}'s Workload {what}")
        return found[0]

    # -- the MPIJobs and their pods

    async def create(self, job: Obj) -> Obj:
        created: Obj = await self.kube.create(MPIJOBS, self.ns, job)
        return created

    async def job(self, name: str) -> Obj:
        got: Obj = await self.kube.get(MPIJOBS, self.ns, name)
        return got

    async def wait_job(
        self, name: str, check: Callable[[Obj], bool], what: str, within: float = 60
    ) -> Obj:
        found: list[Obj] = []

        async def ok() -> bool:
            job = await self.job(name)
            found[:] = [job] if check(job) else []
            return bool(found)

        await eventually(ok, within=within, interval=0.2, what=f"MPIJob {name} {what}")
        return found[0]

    async def pods(self, job: str, role: str | None = None) -> list[Obj]:
        """The live (not being deleted) pods of MPIJob ``job``, workers and launcher."""
        selector = f"{JOB_NAME}={job}" + (f",{JOB_ROLE}={role}" if role else "")
        workers = (await self.kube.list(PODS, self.ns, label_selector=selector))["items"]
        launchers: list[Obj] = []
        if role in (None, "launcher"):
            sel = f"batch.kubernetes.io/job-name={job}-launcher"
            launchers = (await self.kube.list(PODS, self.ns, label_selector=sel))["items"]
        by_name = {p["metadata"]["name"]: p for p in [*workers, *launchers]}
        pods = [p for p in by_name.values() if not p["metadata"].get("deletionTimestamp")]
        return sorted(pods, key=lambda p: str(p["metadata"]["name"]))

    async def wait_running(self, job: str, workers: int, within: float = 60) -> list[Obj]:
        """Waits until ``job`` has ``workers`` Running workers and one Running launcher
        pod; returns them (launcher last)."""
        found: list[Obj] = []

        async def ok() -> bool:
            w = [p for p in await self.pods(job, "worker") if phase(p) == "Running"]
            launchers = [p for p in await self.pods(job, "launcher") if is_launcher(p, job)]
            running = [p for p in launchers if phase(p) == "Running"]
            found[:] = [*w, *running] if len(w) == workers and len(running) == 1 else []
            return bool(found)

        await eventually(ok, within=within, interval=0.2, what=f"{job} running")
        return found

    async def warnings(self) -> list[tuple[str, str, str]]:
        """(object, reason, message) of every Warning Event in the namespace, the
        operator's and Kueue's complaints (none expected), but Kueue's Pending of a
        Workload waiting for quota."""
        items = (await self.kube.list(EVENTS, self.ns))["items"]
        return [
            (
                f"{e['involvedObject'].get('kind')}/{e['involvedObject'].get('name')}",
                e.get("reason", ""),
                e.get("message", ""),
            )
            for e in items
            if e.get("type") == "Warning"
            and (e["involvedObject"].get("kind"), e.get("reason")) != ("Workload", "Pending")
        ]

    async def launcher_job(self, job: str) -> Obj | None:
        try:
            got: Obj = await self.kube.get(JOBS, self.ns, f"{job}-launcher")
            return got
        except ApiError as e:
            if is_not_found(e):
                return None
            raise

    async def finish_launcher(self, job: str) -> None:
        """Makes ``job``'s running launcher pod exit 0 on its KWOK node now."""
        launchers = [
            p
            for p in await self.pods(job, "launcher")
            if is_launcher(p, job) and phase(p) == "Running"
        ]
        assert len(launchers) == 1, [p["metadata"]["name"] for p in launchers]
        patch = {"metadata": {"annotations": {COMPLETE_AFTER: "0s"}}}
        await self.kube.patch(PODS, self.ns, launchers[0]["metadata"]["name"], patch)
