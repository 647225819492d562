"""MultiKueue through the real Kueue: the suite's cluster is the manager, a second local
cluster (KWOK nodes, its own Kueue) the worker, each with our operator watching the
test's namespace. The setup is the documented one (examples/kueue, the kubeconfig
Secret made with kubectl). An MPIJob created on the manager with
``runPolicy.managedBy: kueue.x-k8s.io/multikueue`` is left alone by the manager's
operator (no pod, no launcher Job, no status of its own); MultiKueue creates its copy
on the worker, where our operator runs it; the copy's status reaches the manager's job
until Succeeded, and then MultiKueue removes the worker's objects. A second job deleted
on the manager while it runs on the worker is removed from the worker too, pods and
all."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import api_client, controllers
from kueue_harness import (
    WORKLOADS,
    KueueEnv,
    KueueObjects,
    StartOperator,
    is_true,
    job_condition,
    podsets,
)

from devcluster import FULL, LocalCluster
from devcluster.kueue import NAMESPACE, Kueue
from devcluster.polling import eventually
from mpi_operator.client import MPIJOBS, KubeClient, Resource
from mpi_operator.client.errors import ApiError, is_not_found
from mpi_operator.client.resources import SERVICE_ACCOUNTS
from mpi_operator.controller.kubeflow.controller import MPIJobController

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "kueue"
MULTIKUEUE_CLUSTERS = Resource(
    "kueue.x-k8s.io", "v1beta2", "multikueueclusters", "MultiKueueCluster", False
)
ADMISSION_CHECKS = Resource("kueue.x-k8s.io", "v1beta2", "admissionchecks", "AdmissionCheck", False)
WORKER = "worker1"  # the MultiKueueCluster and its Secret, as in the example


class Worker:
    def __init__(self, cluster: LocalCluster, kueue: Kueue) -> None:
        self.cluster = cluster
        self.kueue = kueue


@pytest.fixture(scope="module")
def worker(kueue_env: KueueEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    """The worker cluster with its Kueue (the manager's Kueue needs nothing more: MultiKueue
    is on by default)."""
    cluster = LocalCluster(tmp_path_factory.mktemp("worker-cluster"), FULL, nodes=2)
    kueue = Kueue(cluster, cluster.workdir / "kueue", files=kueue_env.kueue.files)
    try:
        cluster.start()
        kueue.start()
        yield Worker(cluster, kueue)
    finally:
        kueue.stop()
        cluster.stop()


@pytest.fixture
async def worker_kube(worker: Worker, kns: str) -> AsyncIterator[KubeClient]:
    """A client of the worker, whose namespace of the test's name exists (MultiKueue
    expects the job's namespace and LocalQueue there)."""
    worker.cluster.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": kns}})
    async with api_client(worker.cluster) as client:

        async def default_sa() -> bool:
            try:
                await client.get(SERVICE_ACCOUNTS, kns, "default")
                return True
            except ApiError as e:
                if is_not_found(e):
                    return False
                raise

        await eventually(default_sa, within=60, interval=0.2, what="the worker's namespace")
        yield client


@pytest.fixture
def manager_setup(kueue_env: KueueEnv, worker: Worker, kns: str, tmp_path: Path) -> Iterator[None]:
    """The documented setup, with kubectl: the worker's queues, the Secret with the
    worker's kubeconfig and the manager's queues; the manager's objects removed after."""
    manager = kueue_env.cluster
    manifest = str(EXAMPLES / "multikueue-manager.yaml")
    worker.cluster.kubectl("apply", "-n", kns, "-f", str(EXAMPLES / "multikueue-worker.yaml"))
    # The worker's admin kubeconfig: its CA and client certificate inline.
    worker_kubeconfig = tmp_path / f"{WORKER}.kubeconfig"
    worker_kubeconfig.write_bytes(worker.cluster.kubeconfig.read_bytes())
    kubeconfig = f"--from-file=kubeconfig={worker_kubeconfig}"
    manager.kubectl("create", "secret", "generic", WORKER, "-n", NAMESPACE, kubeconfig)
    try:
        manager.kubectl("apply", "-n", kns, "-f", manifest)
        yield
    finally:
        manager.kubectl("delete", "-n", kns, "-f", manifest, "--ignore-not-found", "--wait=false")
        manager.kubectl("delete", "secret", WORKER, "-n", NAMESPACE, "--ignore-not-found")


def example_job(name: str) -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load((EXAMPLES / "mpijob-multikueue.yaml").read_text())
    job["metadata"]["name"] = name
    return job


async def test_job_runs_on_the_worker_and_reports_to_the_manager(
    kq: KueueObjects,
    kns: str,
    kueue_env: KueueEnv,
    worker: Worker,
    worker_kube: KubeClient,
    manager_setup: None,
    start_operator: StartOperator,
) -> None:
    await start_operator()
    wq = KueueObjects(worker_kube, kns)
    kube = kq.kube

    async def active() -> bool:
        mkc = await kube.get(MULTIKUEUE_CLUSTERS, None, WORKER)
        check = await kube.get(ADMISSION_CHECKS, None, "multikueue")
        return is_true(mkc, "Active") and is_true(check, "Active")

    await eventually(active, within=60, interval=0.2, what="MultiKueue connected to the worker")

    async with controllers(worker.cluster, kns, MPIJobController) as start_worker_operator:
        await start_worker_operator()

        # The example as written, with kubectl.
        manifest = str(EXAMPLES / "mpijob-multikueue.yaml")
        kueue_env.cluster.kubectl("create", "-n", kns, "-f", manifest)
        wl = await kq.wait_workload("pi", lambda w: is_true(w, "Admitted"), "Admitted")
        assert wl["status"].get("clusterName") == WORKER, wl["status"]
        remote = await wq.wait_job("pi", lambda j: True, "copied to the worker")
        assert remote["spec"]["runPolicy"].get("managedBy") is None

        # The worker's Workload is the manager's copy, of the same name, admitted there.
        async def remote_admitted() -> bool:
            got = await remote_workload(wq, wl["metadata"]["name"])
            return got is not None and is_true(got, "Admitted")

        await eventually(remote_admitted, within=60, interval=0.2, what="admitted on the worker")
        remote_wl = await remote_workload(wq, wl["metadata"]["name"])
        assert remote_wl is not None and podsets(remote_wl) == [("launcher", 1), ("worker", 2)]
        await wq.wait_running("pi", workers=2)

        def running(j: dict[str, Any]) -> bool:
            return job_condition(j, "Running")[0] == "True"

        await kq.wait_job("pi", running, "Running, as its copy on the worker says")
        await no_children_on_the_manager(kq, "pi")

        await wq.finish_launcher("pi")
        await wq.wait_job("pi", lambda j: job_condition(j, "Succeeded")[0] == "True", "Succeeded")

        def succeeded(j: dict[str, Any]) -> bool:
            launcher = ((j.get("status") or {}).get("replicaStatuses") or {}).get("Launcher")
            return (
                job_condition(j, "Succeeded")[0] == "True"
                and (launcher or {}).get("succeeded") == 1
            )

        await kq.wait_job("pi", succeeded, "Succeeded, as its copy on the worker says")
        await kq.wait_workload("pi", lambda w: is_true(w, "Finished"), "Finished")
        await no_children_on_the_manager(kq, "pi")
        await gone_from_the_worker(wq, "pi", wl["metadata"]["name"])

        # A job deleted on the manager while it runs on the worker leaves nothing there.
        await kq.create(example_job("pi-deleted"))
        wl = await kq.wait_workload("pi-deleted", lambda w: is_true(w, "Admitted"), "Admitted")
        await wq.wait_running("pi-deleted", workers=2)
        await kube.delete(MPIJOBS, kns, "pi-deleted")
        await gone_from_the_worker(wq, "pi-deleted", wl["metadata"]["name"])

        async def no_worker_pods() -> bool:
            return await wq.pods("pi-deleted") == []

        await eventually(no_worker_pods, within=60, interval=0.2, what="the worker's pods gone")
        assert await kq.warnings() == []


async def no_children_on_the_manager(kq: KueueObjects, job: str) -> None:
    assert await kq.pods(job) == []
    assert await kq.launcher_job(job) is None


async def remote_workload(wq: KueueObjects, name: str) -> dict[str, Any] | None:
    try:
        got: dict[str, Any] = await wq.kube.get(WORKLOADS, wq.ns, name)
        return got
    except ApiError as e:
        if is_not_found(e):
            return None
        raise


async def gone_from_the_worker(wq: KueueObjects, job: str, workload: str) -> None:
    async def gone() -> bool:
        try:
            await wq.job(job)
            return False
        except ApiError as e:
            if not is_not_found(e):
                raise
        return await remote_workload(wq, workload) is None

    await eventually(gone, within=90, interval=0.2, what=f"{job} and its Workload off the worker")
