"""Harness for the T9k controller against a real kube-apiserver (api-only shape);
its fixtures are registered by this folder's conftest.py.

The T9k MPIJob CRD (``crd/t9k/``) and the t9k scheduler's PodGroup CRD
(``test/fixtures/crd/``) are applied with kubectl for the module and deleted
after it, so the shared cluster's ``kubectl get mpijob`` keeps meaning the
Kubeflow MPIJob for other tests. No kubelet runs here: tests move pods
through phases with status updates. The controller runs in-process, watching
only the test's namespace, with its own metrics registry.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import JobObjects, controllers

from devcluster.crds import crds_installed
from devcluster.polling import eventually
from mpi_operator.client import PODS, KubeClient
from mpi_operator.controller.t9k import T9kMPIJobController
from mpi_operator.controller.t9k.context import T9K_MPIJOBS

Obj = dict[str, Any]
REPO = Path(__file__).resolve().parents[3]
T9K_CRD = REPO / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"
POD_GROUP_CRD = REPO / "test" / "fixtures" / "crd" / "scheduler.tensorstack.dev_podgroups.yaml"
StartT9k = Callable[..., Awaitable[T9kMPIJobController]]


@pytest.fixture(scope="module")
def t9k_crds(api_cluster: Any) -> Iterator[None]:
    with crds_installed(api_cluster, (T9K_CRD, POD_GROUP_CRD)):
        yield


@pytest.fixture
async def start_t9k(api_cluster: Any, namespace: str, t9k_crds: None) -> AsyncIterator[StartT9k]:
    async with controllers(api_cluster, namespace, T9kMPIJobController) as start:
        yield start


def t9k_job(name: str = "job", workers: int = 2, **spec: Any) -> Obj:
    worker: Obj = {
        "replicas": workers,
        "cmd": ["./pi", "100"],
        "template": {"spec": {"containers": [{"name": "mpi-worker", "image": "mpi-pi"}]}},
    }
    worker.update(spec.pop("worker", {}))
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {"worker": worker, **spec},
    }


class T9kCluster(JobObjects):
    """Reads and pokes T9k objects in one namespace, playing the kubelet."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        super().__init__(kube, namespace, T9K_MPIJOBS)

    async def patch_job(self, patch: Obj, name: str = "job") -> None:
        await self.kube.patch(T9K_MPIJOBS, self.ns, name, patch)

    async def status(self, name: str = "job") -> Obj:
        status: Obj = (await self.job(name)).get("status") or {}
        return status

    async def pods(self, job: str = "job") -> dict[str, Obj]:
        result = await self.kube.list(
            PODS, self.ns, label_selector=f"batch.tensorstack.dev/job-name={job}"
        )
        return {
            p["metadata"]["name"]: p
            for p in result["items"]
            if not p["metadata"].get("deletionTimestamp")
        }

    async def wait_pods(
        self, names: set[str], job: str = "job", within: float = 20
    ) -> dict[str, Obj]:
        found: dict[str, Obj] = {}

        async def check() -> bool:
            found.clear()
            found.update(await self.pods(job))
            return set(found) == names

        await eventually(check, within=within, what=f"pods {sorted(names)}")
        return found

    async def set_phase(self, name: str, phase: str, exit_code: int | None = None) -> None:
        pod = await self.kube.get(PODS, self.ns, name)
        status: Obj = {"phase": phase}
        containers = pod["spec"]["containers"]
        if phase == "Running":
            status["containerStatuses"] = [
                {
                    "name": c["name"],
                    "image": c.get("image", "x"),
                    "imageID": "",
                    "ready": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}},
                }
                for c in containers
            ]
        elif exit_code is not None:
            status["containerStatuses"] = [
                {
                    "name": c["name"],
                    "image": c.get("image", "x"),
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "state": {
                        "terminated": {
                            "exitCode": exit_code,
                            "reason": "Completed" if exit_code == 0 else "Error",
                            "startedAt": "2024-01-01T00:00:00Z",
                            "finishedAt": "2024-01-01T00:00:01Z",
                        }
                    },
                }
                for c in containers
            ]
        pod["status"] = {**(pod.get("status") or {}), **status}
        await self.kube.replace_status(PODS, self.ns, name, pod)

    async def wait_status(
        self, check: Callable[[Obj], bool], what: str, name: str = "job", within: float = 20
    ) -> Obj:
        seen: list[Obj] = [{}]

        async def probe() -> bool:
            seen[0] = await self.status(name)
            return check(seen[0])

        try:
            await eventually(probe, within=within, what=what)
        except AssertionError as err:
            raise AssertionError(f"{err}; last status: {seen[0]}") from None
        return seen[0]

    async def wait_phase(self, phase: str, name: str = "job", within: float = 20) -> Obj:
        return await self.wait_status(
            lambda s: s.get("phase") == phase, f"phase {phase}", name, within
        )


def conditions(status: Obj) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status.get("conditions") or []}


@pytest.fixture
def t9k(kube: KubeClient, namespace: str) -> T9kCluster:
    return T9kCluster(kube, namespace)
