"""What the full-shape controller tests that run MPIJobs on KWOK nodes share: reading a
job's pods, making KWOK fail, evict or complete one of them (by annotating it: the
stages in devcluster/stages/ then write its status as a kubelet would), holding a pod's
deletion with a finalizer of the test's own, and binding pods whose scheduler does not
run here (Volcano's). A unique module name: several test folders have a conftest.py."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from controller_harness import Cluster
from harness import api_client

from devcluster.polling import eventually
from mpi_operator.client import PODS, KubeClient, is_not_found
from mpi_operator.client.errors import ApiError

Obj = dict[str, Any]
ATTEMPT = "training.kubeflow.org/restart-attempt"
ROLE = "training.kubeflow.org/job-role"
#: The test's own finalizer: a pod carrying it stays (Terminating) once deleted.
HOLD = "test.mpi-operator.io/hold"
KWOK = "kwok.mpi-operator.io/"


def live(pods: list[Obj]) -> list[Obj]:
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def attempt(obj: Obj) -> str | None:
    return (obj["metadata"].get("labels") or {}).get(ATTEMPT)


async def pods_by_name(cluster: Cluster) -> dict[str, Obj]:
    return {p["metadata"]["name"]: p for p in await cluster.list(PODS)}


async def launcher_pods(cluster: Cluster, job: str = "job") -> list[Obj]:
    """The launcher Job's pods (any Job of that name, terminating ones included)."""
    return [
        p
        for p in await cluster.list(PODS, f"{ROLE}=launcher")
        if p["metadata"].get("labels", {}).get("training.kubeflow.org/job-name") == job
    ]


async def wait_launcher_pod(cluster: Cluster, attempt_label: str | None, within: float = 30) -> Obj:
    """The live launcher pod of the given attempt (None: the first run), once bound and
    Running."""
    found: list[Obj] = []

    async def check() -> bool:
        found[:] = [
            p
            for p in live(await launcher_pods(cluster))
            if attempt(p) == attempt_label and phase(p) == "Running"
        ]
        return bool(found)

    await eventually(check, within=within, interval=0.2, what=f"launcher pod {attempt_label}")
    return found[0]


async def holds_for(check: Callable[[], Awaitable[bool]], seconds: float, what: str) -> None:
    """``check`` stays true for ``seconds`` (asked every tenth of a second)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        assert await check(), what
        await asyncio.sleep(0.1)


async def annotate(cluster: Cluster, pod: Obj, annotations: dict[str, str]) -> None:
    patch = {"metadata": {"annotations": annotations}}
    await cluster.kube.patch(PODS, cluster.ns, pod["metadata"]["name"], patch)


async def kwok_fail(cluster: Cluster, pod: Obj) -> None:
    """KWOK fails the (first-run) pod at once: phase Failed, its containers exit 1."""
    await annotate(cluster, pod, {f"{KWOK}fail-first-run-after": "0s"})


async def kwok_evict(cluster: Cluster, pod: Obj) -> None:
    """KWOK evicts the pod at once: phase Failed, reason Evicted, DisruptionTarget."""
    await annotate(cluster, pod, {f"{KWOK}evict-after": "0s"})


async def kwok_complete(cluster: Cluster, pod: Obj) -> None:
    """KWOK completes the pod at once: phase Succeeded, its containers exit 0."""
    await annotate(cluster, pod, {f"{KWOK}complete-after": "0s"})


async def wait_phase(cluster: Cluster, name: str, wanted: str, within: float = 20) -> Obj:
    got: list[Obj] = []

    async def check() -> bool:
        got[:] = [await cluster.kube.get(PODS, cluster.ns, name)]
        return phase(got[0]) == wanted

    await eventually(check, within=within, interval=0.1, what=f"pod {name} {wanted}")
    return got[0]


async def hold(cluster: Cluster, name: str) -> None:
    """Adds the test's finalizer to pod ``name`` (strategic merge: others stay)."""
    patch = {"metadata": {"finalizers": [HOLD]}}
    await cluster.kube.patch(PODS, cluster.ns, name, patch, patch_type="strategic")


async def release(cluster: Cluster, name: str) -> None:
    """Removes the test's finalizer from pod ``name``, if it is still there."""
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [HOLD]}}
    try:
        await cluster.kube.patch(PODS, cluster.ns, name, patch, patch_type="strategic")
    except ApiError as err:
        if not is_not_found(err):
            raise


async def release_all(cluster: Cluster) -> None:
    """Removes the test's finalizer from every pod of the namespace (clean-up)."""
    for pod in await cluster.list(PODS):
        if HOLD in (pod["metadata"].get("finalizers") or []):
            await release(cluster, pod["metadata"]["name"])


async def launcher_job_gone(cluster: Cluster, uid: str) -> bool:
    launcher = await cluster.launcher()
    return launcher is None or launcher["metadata"]["uid"] != uid


async def job_status(cluster: Cluster) -> Obj:
    status: Obj = (await cluster.job()).get("status") or {}
    return status


async def running_again(cluster: Cluster, restarts: int = 1) -> bool:
    """The MPIJob is Running (not Restarting) with ``restarts`` restarts counted."""
    conditions = await cluster.conditions()
    status = await job_status(cluster)
    return (
        conditions.get("Running", ("", ""))[0] == "True"
        and conditions.get("Restarting", ("False", ""))[0] != "True"
        and status.get("restartCount") == restarts
    )


async def launcher_job_of_attempt(cluster: Cluster, attempt_label: str) -> Obj | None:
    launcher = await cluster.launcher()
    if launcher is None or launcher["metadata"].get("deletionTimestamp"):
        return None
    return launcher if attempt(launcher) == attempt_label else None


async def bind(cluster: Cluster, pod: Obj, node: str) -> None:
    """What a scheduler does: binds the pod to ``node`` (a 409 if already bound)."""
    name = pod["metadata"]["name"]
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "uid": pod["metadata"]["uid"]},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    try:
        await cluster.kube.request("POST", PODS.path(cluster.ns, name, "binding"), body=body)
    except ApiError as err:
        if err.status not in (404, 409):
            raise


@contextlib.asynccontextmanager
async def fake_gang_scheduler(
    clusters: list[Cluster], scheduler: str, node: str, min_member: int
) -> AsyncIterator[None]:
    """Stands in for a gang scheduler that does not run here (Volcano): the pending
    pods of ``scheduler`` in each namespace are bound to ``node`` only once at least
    ``min_member`` live pods of it exist there (bound or not), as Volcano's gang plugin
    lets a job's tasks be placed only when its PodGroup's minMember can be. Stopped on
    exit, whatever happened."""

    async def one_pass(cluster: Cluster) -> None:
        pods = [
            p for p in live(await cluster.list(PODS)) if p["spec"].get("schedulerName") == scheduler
        ]
        pods = [p for p in pods if phase(p) in ("Pending", "Running")]
        pending = [p for p in pods if not p["spec"].get("nodeName")]
        if pending and len(pods) >= min_member:
            await asyncio.gather(*(bind(cluster, p, node) for p in pending))

    async def run() -> None:
        while True:
            for cluster in clusters:
                await one_pass(cluster)
            await asyncio.sleep(0.2)

    task = asyncio.create_task(run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def delete_job_and_wait(cluster: Cluster, within: float = 30) -> None:
    """Deletes the MPIJob as ``kubectl delete`` does (background propagation: the
    garbage collector deletes its children after it) and waits until it is gone."""
    await cluster.kube.delete(cluster.resource, cluster.ns, "job", propagation_policy="Background")

    async def gone() -> bool:
        try:
            await cluster.job()
        except ApiError as err:
            if is_not_found(err):
                return True
            raise
        return False

    await eventually(gone, within=within, interval=0.2, what="the MPIJob gone")


# Fixtures ``kube`` and ``cluster`` of the KWOK tests that hold pods, on the full cluster;
# a test module imports them to use them in place of conftest.py's.
@pytest.fixture(name="kube")
async def kwok_kube_fixture(full_cluster: Any) -> AsyncIterator[KubeClient]:
    async with api_client(full_cluster, qps=50, burst=100) as client:
        yield client


@pytest.fixture(name="cluster")
async def kwok_cluster_fixture(kube: KubeClient, full_namespace: str) -> AsyncIterator[Cluster]:
    view = Cluster(kube, full_namespace)
    try:
        yield view
    finally:
        await release_all(view)  # a failed test leaves no pod held
