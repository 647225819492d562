"""An elastic MPIJob scaled through the real kubectl on the full local cluster (KWOK
nodes), with the operator running: ``kubectl scale`` adds and removes workers without
touching the launcher, ``discover_hosts.sh`` follows the running workers, and the scale
subresource shows the replicas and the selector a HorizontalPodAutoscaler needs. A
HorizontalPodAutoscaler (kube-controller-manager's controller) scales the job through it.

No metrics server runs here, so the HPA is moved by its bounds, which it applies without
metrics: a job below the HPA's ``minReplicas`` is scaled up to it, one above its
``maxReplicas`` down to it. That is the whole path an autoscaler takes (read the scale,
write the scale, the operator follows); which number a metric would have asked for is
the HPA's business. A scale outside the job's elastic policy is refused by the API
server, and the HPA says so in its condition, naming the field."""

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


async def _apply_elastic_pi(cluster: Any, ns: str) -> None:
    """The pi job, two workers, elastic between one and four, applied with kubectl."""
    job = pi_mpijob("pi", workers=2, launcher_exit=None)
    job["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 4}
    await kubectl(cluster, "apply", "-n", ns, "-f", "-", input=yaml.safe_dump(job))


async def _launcher_uids(cluster: Any, ns: str) -> set[str]:
    pods = await kubectl_json(cluster, "get", "pods", "-n", ns, "-l",
                              "training.kubeflow.org/job-role=launcher")  # fmt: skip
    return {p["metadata"]["uid"] for p in pods["items"]}


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
    await _apply_elastic_pi(full_cluster, ns)

    async def scale_is(replicas: int, running: int) -> bool:
        scale = await _scale(full_cluster, ns)
        return bool(scale["spec"] == {"replicas": replicas}) and scale["status"] == {
            "replicas": running,
            "selector": SELECTOR,
        }

    await eventually(lambda: scale_is(2, 2), within=60, interval=0.5, what="2 workers running")
    launcher_uids = await _launcher_uids(full_cluster, ns)
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
    assert await _launcher_uids(full_cluster, ns) == launcher_uids


def _hpa(min_replicas: int, max_replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "pi"},
        "spec": {
            "scaleTargetRef": {
                "apiVersion": "kubeflow.org/v2beta1",
                "kind": "MPIJob",
                "name": "pi",
            },
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 80},
                    },
                }
            ],
        },
    }


async def test_an_hpa_scales_an_elastic_job_within_its_policy(
    full_cluster: Any, full_namespace: str, operator: MPIJobController
) -> None:
    ns = full_namespace
    await _apply_elastic_pi(full_cluster, ns)

    async def scaled_to(n: int) -> bool:
        scale = await _scale(full_cluster, ns)
        names = [f"pi-worker-{i}" for i in range(n)]
        return bool(
            scale["spec"]["replicas"] == n and await _running_workers(full_cluster, ns) == names
        )

    async def hpa_status() -> dict[str, Any]:
        hpa = await kubectl_json(full_cluster, "get", "hpa", "pi", "-n", ns)
        status: dict[str, Any] = hpa.get("status") or {}
        return status

    await eventually(lambda: scaled_to(2), within=60, interval=0.5, what="2 workers running")
    launcher_uids = await _launcher_uids(full_cluster, ns)
    assert launcher_uids

    # Below the HPA's minimum: scaled up to it.
    await kubectl(full_cluster, "apply", "-n", ns, "-f", "-", input=yaml.safe_dump(_hpa(3, 4)))
    await eventually(lambda: scaled_to(3), within=60, interval=0.5, what="HPA scaled up to 3")

    async def hpa_saw(n: int) -> bool:
        status = await hpa_status()
        return bool(status.get("currentReplicas") == n and status.get("desiredReplicas") == n)

    await eventually(lambda: hpa_saw(3), within=60, interval=0.5, what="the HPA's status at 3")

    # Above its maximum: scaled down to it, the highest index going.
    await kubectl(full_cluster, "apply", "-n", ns, "-f", "-", input=yaml.safe_dump(_hpa(1, 2)))
    await eventually(lambda: scaled_to(2), within=60, interval=0.5, what="HPA scaled down to 2")

    # An HPA asking for more than the elastic policy allows is refused by the API server;
    # the HPA's condition carries the refusal, which names the field.
    await kubectl(full_cluster, "apply", "-n", ns, "-f", "-", input=yaml.safe_dump(_hpa(6, 8)))

    messages: list[str] = []

    async def refused() -> bool:
        conditions = (await hpa_status()).get("conditions") or []
        messages[:] = [
            str(c.get("message") or "")
            for c in conditions
            if c.get("type") == "AbleToScale"
            and c.get("status") == "False"
            and c.get("reason") == "FailedUpdateScale"
        ]
        return bool(messages)

    await eventually(refused, within=60, interval=0.5, what="the HPA refused")
    assert "spec.elasticPolicy.maxReplicas" in messages[0], messages
    assert await _running_workers(full_cluster, ns) == ["pi-worker-0", "pi-worker-1"]
    assert await _launcher_uids(full_cluster, ns) == launcher_uids
