"""End to end on the full local cluster (scheduler, Job controller, GC, KWOK nodes),
driven through the real kubectl, with the controller running against it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml
from examples_support import in_process_operator, kubectl_json, kubectl_table
from examples_support import kubectl_async as kubectl

from devcluster.polling import eventually
from devcluster.sample_jobs import pi_mpijob
from mpi_operator.controller.kubeflow.controller import MPIJobController

OPERATOR_LABEL = "training.kubeflow.org/operator-name=mpi-operator"


async def _is(value: Any, expected: str) -> bool:
    return bool(await value == expected)


@pytest.fixture
async def operator(full_cluster: Any, full_namespace: str) -> AsyncIterator[MPIJobController]:
    async with in_process_operator(full_cluster, full_namespace) as controller:
        yield controller


async def condition(cluster: Any, ns: str, name: str, kind: str) -> str:
    job = await kubectl_json(cluster, "get", "mpijob", name, "-n", ns)
    for c in (job.get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return str(c["status"])
    return ""


@pytest.mark.parametrize("implementation", ["OpenMPI", "Intel", "MPICH"])
async def test_job_runs_to_success_through_kubectl(
    full_cluster: Any, full_namespace: str, operator: MPIJobController, implementation: str
) -> None:
    ns = full_namespace
    await kubectl(
        full_cluster,
        "apply",
        "-n",
        ns,
        "-f",
        "-",
        input=yaml.safe_dump(pi_mpijob("pi", implementation=implementation)),
    )

    await eventually(
        lambda: _is(condition(full_cluster, ns, "pi", "Running"), "True"),
        within=60,
        interval=0.5,
        what="Running",
    )
    await eventually(
        lambda: _is(condition(full_cluster, ns, "pi", "Succeeded"), "True"),
        within=60,
        interval=0.5,
        what="Succeeded",
    )
    job = await kubectl_json(full_cluster, "get", "mpijob", "pi", "-n", ns)
    assert job["status"]["replicaStatuses"]["Launcher"] == {"succeeded": 1}

    # cleanPodPolicy Running removes the workers once the launcher is done.
    async def no_workers() -> bool:
        pods = await kubectl_json(
            full_cluster, "get", "pods", "-n", ns, "-l", "training.kubeflow.org/job-role=worker"
        )
        return bool(pods["items"] == [])

    await eventually(no_workers, within=30, interval=0.5, what="workers cleaned up")
    events = (
        await kubectl_json(
            full_cluster, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=pi"
        )
    )["items"]
    reasons = {e["reason"] for e in events if e["involvedObject"]["kind"] == "MPIJob"}
    assert {"MPIJobCreated", "MPIJobRunning", "MPIJobSucceeded"} <= reasons
    # The reference's event source: a query (or an alert) on it finds every one of them.
    selector = "involvedObject.name=pi,source=mpi-job-controller"
    sourced = await kubectl_json(
        full_cluster, "get", "events", "-n", ns, "--field-selector", selector
    )
    assert {e["reason"] for e in sourced["items"]} == reasons


async def test_failed_launcher_fails_the_job_with_the_pod_reason(
    full_cluster: Any, full_namespace: str, operator: MPIJobController
) -> None:
    ns = full_namespace
    await kubectl(
        full_cluster,
        "apply",
        "-n",
        ns,
        "-f",
        "-",
        input=yaml.safe_dump(pi_mpijob("broken", launcher_exit=3)),
    )
    await eventually(
        lambda: _is(condition(full_cluster, ns, "broken", "Failed"), "True"),
        within=60,
        interval=0.5,
        what="Failed",
    )
    job = await kubectl_json(full_cluster, "get", "mpijob", "broken", "-n", ns)
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"].startswith("BackoffLimitExceeded")


async def test_deleting_the_mpijob_removes_every_child(
    full_cluster: Any, full_namespace: str, operator: MPIJobController
) -> None:
    ns = full_namespace
    job = pi_mpijob("gone")
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"]["annotations"] = {}
    await kubectl(full_cluster, "apply", "-n", ns, "-f", "-", input=yaml.safe_dump(job))
    await eventually(
        lambda: _is(condition(full_cluster, ns, "gone", "Running"), "True"),
        within=60,
        interval=0.5,
        what="Running",
    )
    await kubectl(full_cluster, "delete", "mpijob", "gone", "-n", ns, "--wait=true")

    async def no_children_left() -> bool:
        for kind in ("pods", "jobs", "services", "configmaps", "secrets"):
            items = await kubectl_json(full_cluster, "get", kind, "-n", ns, "-l", OPERATOR_LABEL)
            if items["items"]:
                return False
        return True

    await eventually(
        no_children_left, within=60, interval=0.5, what="garbage collector removes the children"
    )


async def test_kubectl_get_shows_the_state_through_the_lifecycle(
    full_cluster: Any, full_namespace: str, operator: MPIJobController
) -> None:
    """STATE is the latest true condition: Suspended, then Running once resumed, then
    Succeeded; a job whose launcher fails reads Failed."""
    ns = full_namespace
    job = pi_mpijob("columns")
    job["spec"]["runPolicy"]["suspend"] = True
    annotations = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"]["annotations"]
    annotations["kwok.mpi-operator.io/complete-after"] = "8s"
    await kubectl(full_cluster, "apply", "-n", ns, "-f", "-", input=yaml.safe_dump(job))
    await kubectl(
        full_cluster, "apply", "-n", ns, "-f", "-",
        input=yaml.safe_dump(pi_mpijob("failing", launcher_exit=2)),
    )  # fmt: skip

    async def row(name: str) -> dict[str, str]:
        rows = await asyncio.to_thread(kubectl_table, full_cluster, "mpijobs", name, "-n", ns)
        return rows[0]

    async def shows(name: str, **expected: str) -> bool:
        current = await row(name)
        return all(current[k] == v for k, v in expected.items())

    await eventually(
        lambda: shows("columns", STATE="Suspended", ACTIVE="", WORKERS="2", LAUNCHER="{}"),
        within=30, interval=0.3, what="STATE Suspended",
    )  # fmt: skip
    await kubectl(
        full_cluster, "patch", "mpijob", "columns", "-n", ns, "--type=merge",
        "-p", json.dumps({"spec": {"runPolicy": {"suspend": False}}}),
    )  # fmt: skip
    await eventually(
        lambda: shows("columns", STATE="Running", ACTIVE="2", LAUNCHER='{"active":1}'),
        within=60, interval=0.3, what="STATE Running with 2 active workers",
    )  # fmt: skip
    await eventually(
        lambda: shows("columns", STATE="Succeeded", LAUNCHER='{"succeeded":1}'),
        within=60, interval=0.3, what="STATE Succeeded",
    )  # fmt: skip
    await eventually(
        lambda: shows("failing", STATE="Failed"), within=60, interval=0.3, what="STATE Failed"
    )
    assert list(await row("columns")) == [
        "NAME", "STATE", "ACTIVE", "WORKERS", "LAUNCHER", "AGE",
    ]  # fmt: skip
    wide = await asyncio.to_thread(kubectl_table, full_cluster, "mpij", "-n", ns, "-o", "wide")
    reasons = {r["NAME"]: r["REASON"] for r in wide}
    assert reasons["columns"] == "MPIJobSucceeded"
    assert reasons["failing"].startswith("BackoffLimitExceeded")
