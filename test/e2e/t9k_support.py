"""Helpers of the T9k end-to-end tests: a T9k MPIJob, and kubectl-driven reads,
waits and the KWOK annotations that finish a launcher."""

from __future__ import annotations

from typing import Any

import yaml
from examples_support import kubectl_async as kubectl
from examples_support import kubectl_json

from devcluster.polling import eventually

T9K = "mpijobs.batch.tensorstack.dev"
COMPLETE_AFTER = "kwok.mpi-operator.io/complete-after"
EXIT_CODE = "kwok.mpi-operator.io/exit-code"


def t9k_job(name: str, workers: int = 2, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "worker": {
                "replicas": workers,
                "extraMPIArgs": ["-N", "1"],
                "cmd": ["python3", "/app/pi.py"],
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "mpi-worker",
                                "image": "t9kpublic/mpi-pi",
                                "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": 2}},
                            }
                        ]
                    }
                },
            },
            **spec,
        },
    }


async def apply(cluster: Any, ns: str, obj: dict[str, Any]) -> None:
    await kubectl(cluster, "apply", "-n", ns, "-f", "-", input=yaml.safe_dump(obj))


async def t9k_status(cluster: Any, ns: str, name: str) -> dict[str, Any]:
    job = await kubectl_json(cluster, "get", T9K, name, "-n", ns)
    status: dict[str, Any] = job.get("status") or {}
    return status


async def wait_phase(
    cluster: Any, ns: str, name: str, phase: str, within: float = 60
) -> dict[str, Any]:
    seen: list[dict[str, Any]] = [{}]

    async def check() -> bool:
        seen[0] = await t9k_status(cluster, ns, name)
        return seen[0].get("phase") == phase

    try:
        await eventually(check, within=within, interval=0.5, what=f"{name} phase {phase}")
    except AssertionError as err:
        raise AssertionError(f"{err}; last status: {seen[0]}") from None
    return seen[0]


async def pod_names(cluster: Any, ns: str, job: str) -> set[str]:
    pods = await kubectl_json(
        cluster, "get", "pods", "-n", ns, "-l", f"batch.tensorstack.dev/job-name={job}"
    )
    return {
        p["metadata"]["name"] for p in pods["items"] if not p["metadata"].get("deletionTimestamp")
    }


async def wait_pods(cluster: Any, ns: str, job: str, names: set[str], within: float = 60) -> None:
    async def check() -> bool:
        return await pod_names(cluster, ns, job) == names

    await eventually(check, within=within, interval=0.5, what=f"pods of {job} == {sorted(names)}")


async def finish_launcher(cluster: Any, ns: str, job: str, exit_code: int) -> None:
    await kubectl(
        cluster,
        "annotate",
        "pod",
        f"{job}-launcher",
        "-n",
        ns,
        f"{COMPLETE_AFTER}=1s",
        f"{EXIT_CODE}={exit_code}",
    )


def agg(**counts: int) -> dict[str, int]:
    base = dict.fromkeys(
        ("creating", "pending", "running", "succeeded", "failed", "unknown", "deleted"), 0
    )
    return {**base, **counts}


def conditions(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status.get("conditions") or []}
