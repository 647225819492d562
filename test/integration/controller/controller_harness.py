"""Harness for the controller against a real kube-apiserver (the api-only shape).

No Job controller, scheduler or kubelet runs here, so the tests play their
part by hand, as the reference operator's integration tests do: they move
pods through phases with status updates, create the launcher's pod, and mark
the launcher Job complete or failed. The MPIJob controller runs in-process,
watching only the test's namespace, with its own metrics registry.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from harness import JobObjects, controllers

from devcluster.polling import eventually
from mpi_operator.client import JOBS, MPIJOBS, PODS, KubeClient
from mpi_operator.controller.kubeflow.controller import MPIJobController

Obj = dict[str, Any]
StartOperator = Callable[..., Awaitable[MPIJobController]]


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
async def start_operator(api_cluster: Any, namespace: str) -> AsyncIterator[StartOperator]:
    async with controllers(api_cluster, namespace, MPIJobController) as start:
        yield start


def mpijob(
    name: str = "job",
    workers: int | None = 2,
    *,
    worker_template: Obj | None = None,
    launcher_template: Obj | None = None,
    **spec: Any,
) -> Obj:
    container = {"name": "main", "image": "mpi-pi:latest"}
    replica_specs: Obj = {
        "Launcher": {
            "replicas": 1,
            "template": launcher_template or {"spec": {"containers": [copy.deepcopy(container)]}},
        }
    }
    if workers is not None:
        replica_specs["Worker"] = {
            "replicas": workers,
            "template": worker_template or {"spec": {"containers": [copy.deepcopy(container)]}},
        }
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {"slotsPerWorker": 1, "mpiReplicaSpecs": replica_specs, **spec},
    }


class Cluster(JobObjects):
    """Reads and pokes Kubeflow MPIJobs and their children in one namespace."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        super().__init__(kube, namespace, MPIJOBS)

    async def list(self, resource: Any, selector: str | None = None) -> list[Obj]:
        result = await self.kube.list(resource, self.ns, label_selector=selector)
        items: list[Obj] = result["items"]
        return items

    async def workers(self, job: str = "job") -> list[Obj]:
        pods = await self.list(
            PODS, f"training.kubeflow.org/job-name={job},training.kubeflow.org/job-role=worker"
        )
        return sorted(pods, key=lambda p: str(p["metadata"]["name"]))

    async def launcher(self, job: str = "job") -> Obj | None:
        for j in await self.list(JOBS):
            if j["metadata"]["name"] == f"{job}-launcher":
                return j
        return None

    async def set_pod_status(self, pod: Obj, **status: Any) -> None:
        name = pod["metadata"]["name"]
        fresh = await self.kube.get(PODS, self.ns, name)
        fresh["status"] = {**(fresh.get("status") or {}), **status}
        await self.kube.replace_status(PODS, self.ns, name, fresh)

    async def set_pods_running(self, pods: list[Obj], ready: bool = False) -> None:
        for pod in pods:
            status: Obj = {"phase": "Running"}
            if ready:
                status["conditions"] = [{"type": "Ready", "status": "True"}]
            await self.set_pod_status(pod, **status)

    async def create_launcher_pod(
        self, launcher: Obj, phase: str = "Running", **status: Any
    ) -> Obj:
        template = copy.deepcopy(launcher["spec"]["template"])
        meta = template.get("metadata") or {}
        labels = {**(meta.get("labels") or {}), **launcher["spec"]["selector"]["matchLabels"]}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": launcher["metadata"]["name"] + "-",
                "labels": labels,
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": launcher["metadata"]["name"],
                        "uid": launcher["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": template["spec"],
        }
        created: Obj = await self.kube.create(PODS, self.ns, pod)
        await self.set_pod_status(created, phase=phase, **status)
        return created

    async def wait_launcher(self, job: str = "job", within: float = 20) -> Obj:
        found: list[Obj] = []

        async def check() -> bool:
            launcher = await self.launcher(job)
            found[:] = [launcher] if launcher is not None else []
            return bool(found)

        await eventually(check, within=within, what=f"launcher Job of {job}")
        return found[0]

    async def finish_launcher(self, succeeded: bool, job: str = "job", **extra: Any) -> None:
        launcher = await self.wait_launcher(job)
        stamp = now()
        status = launcher.setdefault("status", {})
        if succeeded:
            status["conditions"] = [
                {"type": "SuccessCriteriaMet", "status": "True"},
                {"type": "Complete", "status": "True"},
            ]
            status.update(succeeded=1, completionTime=stamp)
        else:
            status["conditions"] = [
                {"type": "FailureTarget", "status": "True", **extra},
                {"type": "Failed", "status": "True", **extra},
            ]
            status.update(failed=extra.pop("failed", 1) if "failed" in extra else 1)
        status["startTime"] = stamp
        await self.kube.replace_status(JOBS, self.ns, launcher["metadata"]["name"], launcher)

    async def conditions(self, name: str = "job") -> dict[str, tuple[str, str]]:
        job = await self.job(name)
        return {
            c["type"]: (c["status"], c.get("reason", ""))
            for c in (job.get("status") or {}).get("conditions") or []
        }

    async def wait_condition(
        self, condition: str, status: str = "True", name: str = "job", within: float = 20
    ) -> None:
        async def check() -> bool:
            return (await self.conditions(name)).get(condition, ("", ""))[0] == status

        await eventually(check, within=within, what=f"{name} {condition}={status}")

    async def wait_event(
        self, reason: str, name: str = "job", within: float = 20
    ) -> tuple[str, str, str]:
        found: list[tuple[str, str, str]] = []

        async def check() -> bool:
            found[:] = [e for e in await self.events(name) if e[1] == reason]
            return bool(found)

        await eventually(check, within=within, what=f"event {reason} for {name}")
        return found[0]

    async def wait_replicas(self, status: Obj, name: str = "job", within: float = 20) -> None:
        async def check() -> bool:
            job = await self.job(name)
            return (job.get("status") or {}).get("replicaStatuses") == status

        await eventually(check, within=within, what=f"replicaStatuses == {status}")

    async def wait_workers(self, count: int, job: str = "job", within: float = 20) -> list[Obj]:
        pods: list[Obj] = []

        async def check() -> bool:
            pods[:] = [
                p for p in await self.workers(job) if not p["metadata"].get("deletionTimestamp")
            ]
            return len(pods) == count

        await eventually(check, within=within, what=f"{count} workers of {job}")
        return pods


@pytest.fixture
def cluster(kube: KubeClient, namespace: str) -> Cluster:
    return Cluster(kube, namespace)
