"""An elastic MPIJob scaled through the real kubectl on the full local cluster (KWOK
nodes), with the operator running: ``kubectl scale`` adds and removes workers without
touching the launcher, ``discover_hosts.sh`` follows the running workers, and the scale
subresource shows the replicas and the selector a HorizontalPodAutoscaler needs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml
from examples_support import in_process_operator, kubectl_json
from examples_support import kubectl_async as kubectl

from devcluster.polling import eventually
from devcluster.sample_jobs import pi_mpijob
from mpi_operator.controller.kubeflow.controller import MPIJobController

SELECTOR = (
    "training.kubeflow.org/job-name=pi,training.kubeflow.org/job-role=worker,"
    "training.kubeflow.org/operator-name=mpi-operator"
)


@pytest.fixture
async def operator(full_cluster: Any, full_namespace: str) -> AsyncIterator[MPIJobController]:
    async with in_process_operator(full_cluster, full_namespace) as controller:
        yield controller


async def _scale(cluster: Any, ns: str) -> dict[str, Any]:
    out = await kubectl(
        cluster, "get", "mpijob", "pi", "-n", ns, "--subresource=scale", "-o", "json"
    )
    scale: dict[str, Any] = json.loads(out)
    return scale


async def _running_workers(cluster: Any, ns: str) -> list[str]:
    pods = await kubectl_json(
        cluster, "get", "pods", "-n", ns, "-l", "training.kubeflow.org/job-role=worker"
    )
    return sorted(
        p["metadata"]["name"]
        for p in pods["items"]
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    )


async def _discovered(cluster: Any, ns: str) -> list[str]:
    cm = await kubectl_json(cluster, "get", "configmap", "pi-config", "-n", ns)
    script = str(cm["data"].get("discover_hosts.sh") or "")
    return sorted(
        line.removeprefix("echo ").split(".")[0]
        for line in script.splitlines()
        if line.startswith("echo ")
    )


async def test_kubectl_scale_grows_and_shrinks_an_elastic_job(
    full_cluster: Any, full_namespace: str, operator: MPIJobController
) -> None:
    ns = full_namespace
    job = pi_mpijob("pi", workers=2, launcher_exit=None)
    job["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 4}
    await kubectl(full_cluster, "apply", "-n", ns, "-f", "-", input=yaml.safe_dump(job))

    async def scale_is(replicas: int, running: int) -> bool:
        scale = await _scale(full_cluster, ns)
        return bool(scale["spec"] == {"replicas": replicas}) and scale["status"] == {
            "replicas": running,
            "selector": SELECTOR,
        }

    await eventually(lambda: scale_is(2, 2), within=60, interval=0.5, what="2 workers running")
    launcher = await kubectl_json(full_cluster, "get", "pods", "-n", ns, "-l",
                                  "training.kubeflow.org/job-role=launcher")  # fmt: skip
    launcher_uids = {p["metadata"]["uid"] for p in launcher["items"]}
    assert launcher_uids

    await kubectl(full_cluster, "scale", "mpijob/pi", "-n", ns, "--replicas=4")
    four = ["pi-worker-0", "pi-worker-1", "pi-worker-2", "pi-worker-3"]

    async def workers_are(names: list[str]) -> bool:
        return await _running_workers(full_cluster, ns) == names and (
            await _discovered(full_cluster, ns) == names
        )

    await eventually(lambda: workers_are(four), within=60, interval=0.5, what="4 workers")
    await eventually(lambda: scale_is(4, 4), within=60, interval=0.5, what="scale 4/4")

    await kubectl(full_cluster, "scale", "mpijob/pi", "-n", ns, "--replicas=1")
    await eventually(lambda: workers_are(["pi-worker-0"]), within=60, interval=0.5, what="1 worker")
    await eventually(lambda: scale_is(1, 1), within=60, interval=0.5, what="scale 1/1")
    launcher = await kubectl_json(full_cluster, "get", "pods", "-n", ns, "-l",
                                  "training.kubeflow.org/job-role=launcher")  # fmt: skip
    assert {p["metadata"]["uid"] for p in launcher["items"]} == launcher_uids
