"""T9k MPIJobs end to end on the full local cluster (scheduler, GC, KWOK nodes),
driven through the real kubectl, with the T9k controller running in-process.

The T9k CRD (``crd/t9k/``) and the t9k scheduler's PodGroup CRD
(``test/fixtures/crd/``) are applied for this module and deleted after it:
while the T9k CRD is installed, a bare ``kubectl get mpijob`` means
``mpijobs.batch.tensorstack.dev`` (kubectl prefers that group), so other
modules' ``kubectl get mpijob`` must not see it. Here both are always named
with their group.

KWOK finishes a pod ``complete-after`` its annotation appears; the worker
template is the launcher's too, so tests annotate only the launcher pod once
the job runs, as a finishing mpirun would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from examples_support import kubectl_async as kubectl
from examples_support import kubectl_json
from prometheus_client import CollectorRegistry
from t9k_support import (
    T9K,
    agg,
    apply,
    conditions,
    finish_launcher,
    pod_names,
    t9k_job,
    t9k_status,
    wait_phase,
    wait_pods,
)

from devcluster.crds import crds_installed
from devcluster.polling import eventually
from devcluster.sample_jobs import pi_mpijob
from mpi_operator.client import KubeClient
from mpi_operator.controller.kubeflow.controller import MPIJobController
from mpi_operator.controller.options import ControllerOptions
from mpi_operator.controller.t9k import T9kMPIJobController

REPO = Path(__file__).resolve().parents[2]
T9K_CRD = REPO / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"
POD_GROUP_CRD = REPO / "test" / "fixtures" / "crd" / "scheduler.tensorstack.dev_podgroups.yaml"
KUBEFLOW = "mpijobs.kubeflow.org"


@pytest.fixture(scope="module")
def t9k_crds(full_cluster: Any) -> Iterator[None]:
    with crds_installed(full_cluster, (T9K_CRD, POD_GROUP_CRD)):
        yield


@pytest.fixture
async def operator(
    full_cluster: Any, full_namespace: str, t9k_crds: None
) -> AsyncIterator[T9kMPIJobController]:
    client = await KubeClient.from_kubeconfig(full_cluster.kubeconfig, qps=50, burst=100)
    controller = T9kMPIJobController(
        client, ControllerOptions(namespace=full_namespace), registry=CollectorRegistry()
    )
    try:
        await controller.start(sync_timeout=30)
        yield controller
    finally:
        await controller.stop(drain_seconds=2)
        await client.close()


async def test_t9k_job_runs_to_success_with_the_generated_mpirun_line(
    full_cluster: Any, full_namespace: str, operator: T9kMPIJobController
) -> None:
    ns = full_namespace
    await apply(
        full_cluster,
        ns,
        t9k_job(
            "pi", mpiHome="/usr/local", mca={"btl": "^openib"}, runPolicy={"cleanUpWorkers": "all"}
        ),
    )
    status = await wait_phase(full_cluster, ns, "pi", "Running")
    assert status["aggregate"] == agg(running=3)
    launcher = await kubectl_json(full_cluster, "get", "pod", "pi-launcher", "-n", ns)
    assert launcher["spec"]["containers"][0]["command"] == [
        "/usr/local/bin/mpirun",
        "--prefix",
        "/usr/local",
        "--hostfile",
        "/etc/mpi/hostfile",
        "--mca",
        "btl",
        "^openib",
        "-N",
        "1",
        "python3",
        "/app/pi.py",
    ]
    # No GPUs for the launcher (requests are defaulted from limits by the API server).
    assert launcher["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "1"}
    hostfile = (await kubectl_json(full_cluster, "get", "configmap", "pi-config", "-n", ns))["data"]
    assert (
        hostfile["hostfile"]
        == f"pi-worker-0.pi.{ns}.svc slots=2\npi-worker-1.pi.{ns}.svc slots=2\n"
    )

    await finish_launcher(full_cluster, ns, "pi", 0)
    status = await wait_phase(full_cluster, ns, "pi", "Succeeded")
    assert conditions(status)["Completed"] == "True"
    await wait_pods(full_cluster, ns, "pi", {"pi-launcher"})
    final = await t9k_status(full_cluster, ns, "pi")

    async def aggregate_settled() -> bool:
        # The sync that deletes the workers counts them deleted at once; their
        # replicas leave the tasks when a later sync sees the pods gone.
        final.update(await t9k_status(full_cluster, ns, "pi"))
        workers_listed = [t["replicas"] for t in final["tasks"][1:]] != [[], []]
        return final["aggregate"] == agg(succeeded=1, deleted=2) and not workers_listed

    await eventually(aggregate_settled, within=30, interval=0.5, what="aggregate after clean-up")
    launcher_task = final["tasks"][0]
    assert launcher_task["replicas"][0]["phase"] == "Succeeded"
    assert launcher_task["replicas"][0]["containers"][0]["exitCode"] == 0
    assert [t["replicas"] for t in final["tasks"][1:]] == [[], []]


async def test_t9k_failing_launcher_ends_failed(
    full_cluster: Any, full_namespace: str, operator: T9kMPIJobController
) -> None:
    ns = full_namespace
    await apply(full_cluster, ns, t9k_job("broken", runPolicy={"cleanUpWorkers": False}))
    await wait_phase(full_cluster, ns, "broken", "Running")
    await finish_launcher(full_cluster, ns, "broken", 3)
    status = await wait_phase(full_cluster, ns, "broken", "Failed")
    assert conditions(status)["Failed"] == "True"
    assert status["tasks"][0]["replicas"][0]["containers"][0]["exitCode"] == 3
    # cleanUpWorkers false is none: the workers keep running.
    assert await pod_names(full_cluster, ns, "broken") == {
        "broken-launcher",
        "broken-worker-0",
        "broken-worker-1",
    }


async def test_t9k_debug_mode_keeps_the_job_up(
    full_cluster: Any, full_namespace: str, operator: T9kMPIJobController
) -> None:
    ns = full_namespace
    await apply(full_cluster, ns, t9k_job("dbg", runMode={"debug": {"enable": True}}))
    status = await wait_phase(full_cluster, ns, "dbg", "Debugging")
    assert conditions(status)["Debugging"] == "True"
    launcher = await kubectl_json(full_cluster, "get", "pod", "dbg-launcher", "-n", ns)
    assert launcher["spec"]["containers"][0]["command"] == ["sleep", "inf"]

    async def all_running() -> bool:
        return (await t9k_status(full_cluster, ns, "dbg")).get("aggregate") == agg(running=3)

    await eventually(all_running, within=60, interval=0.5, what="debug pods running")
    # A failure inside debug mode does not fail the job.
    await finish_launcher(full_cluster, ns, "dbg", 1)

    async def launcher_failed() -> bool:
        return (await t9k_status(full_cluster, ns, "dbg")).get("aggregate") == agg(
            running=2, failed=1
        )

    await eventually(launcher_failed, within=60, interval=0.5, what="launcher failed")
    assert (await t9k_status(full_cluster, ns, "dbg"))["phase"] == "Debugging"
    table = await kubectl(full_cluster, "get", T9K, "dbg", "-n", ns)
    assert table.splitlines()[1].split()[1] == "Debugging"


async def test_t9k_pause_and_resume(
    full_cluster: Any, full_namespace: str, operator: T9kMPIJobController
) -> None:
    ns = full_namespace
    pause = {
        "enabled": False,
        "resumeSpecs": [{"type": "launcher", "command": ["mpirun"], "args": ["--continue"]}],
    }
    await apply(full_cluster, ns, t9k_job("pz", runMode={"pause": pause}))
    await wait_phase(full_cluster, ns, "pz", "Running")
    patch = json.dumps({"spec": {"runMode": {"pause": {"enabled": True}}}})
    await kubectl(full_cluster, "patch", T9K, "pz", "-n", ns, "--type=merge", "-p", patch)
    status = await wait_phase(full_cluster, ns, "pz", "Paused")
    assert conditions(status)["Paused"] == "True"
    assert status["aggregate"] == agg(deleted=3)
    assert await pod_names(full_cluster, ns, "pz") == set()
    for kind, name in (("service", "pz"), ("secret", "pz-ssh"), ("configmap", "pz-config")):
        await kubectl(full_cluster, "get", kind, name, "-n", ns)

    patch = json.dumps({"spec": {"runMode": {"pause": {"enabled": False}}}})
    await kubectl(full_cluster, "patch", T9K, "pz", "-n", ns, "--type=merge", "-p", patch)
    status = await wait_phase(full_cluster, ns, "pz", "Running")
    assert conditions(status)["Paused"] == "False"
    launcher = await kubectl_json(full_cluster, "get", "pod", "pz-launcher", "-n", ns)
    container = launcher["spec"]["containers"][0]
    assert (container["command"], container["args"]) == (["mpirun"], ["--continue"])


async def test_t9k_scheduler_pod_group(
    full_cluster: Any, full_namespace: str, operator: T9kMPIJobController
) -> None:
    ns = full_namespace
    await apply(full_cluster, ns, t9k_job("gang", scheduler={"t9kScheduler": {"queue": "default"}}))

    async def group_exists() -> bool:
        out = await asyncio.to_thread(
            full_cluster.kubectl,
            "get",
            "podgroups.scheduler.tensorstack.dev",
            "gang",
            "-n",
            ns,
            "-o",
            "json",
            check=False,
        )
        return out.returncode == 0

    await eventually(group_exists, within=60, interval=0.5, what="PodGroup")
    group = await kubectl_json(
        full_cluster, "get", "podgroups.scheduler.tensorstack.dev", "gang", "-n", ns
    )
    assert group["spec"] == {"minMember": 3, "queue": "default", "priority": 0}
    # No t9k-scheduler runs here, so the pods wait unscheduled: the job stays Pending.
    await wait_pods(full_cluster, ns, "gang", {"gang-launcher", "gang-worker-0", "gang-worker-1"})
    pod = await kubectl_json(full_cluster, "get", "pod", "gang-worker-0", "-n", ns)
    assert pod["spec"]["schedulerName"] == "t9k-scheduler"
    assert not pod["spec"].get("nodeName")
    status = await t9k_status(full_cluster, ns, "gang")
    assert status["phase"] == "Pending"


async def test_t9k_printer_columns(
    full_cluster: Any, full_namespace: str, operator: T9kMPIJobController
) -> None:
    ns = full_namespace
    await apply(full_cluster, ns, t9k_job("cols", workers=3))
    await wait_phase(full_cluster, ns, "cols", "Running")
    lines = (await kubectl(full_cluster, "get", T9K, "-n", ns)).splitlines()
    assert lines[0].split() == ["NAME", "PHASE", "WORKERS", "AGE"]
    assert lines[1].split()[:3] == ["cols", "Running", "3"]


async def test_kubeflow_and_t9k_jobs_side_by_side_in_one_process(
    full_cluster: Any, full_namespace: str, t9k_crds: None
) -> None:
    ns = full_namespace
    client = await KubeClient.from_kubeconfig(full_cluster.kubeconfig, qps=50, burst=100)
    registry = CollectorRegistry()
    kubeflow = MPIJobController(client, ControllerOptions(namespace=ns), registry=registry)
    t9k = T9kMPIJobController(
        client, ControllerOptions(namespace=ns), recorder=kubeflow.recorder, registry=registry
    )
    try:
        await kubeflow.start(sync_timeout=30)
        await t9k.start(sync_timeout=30)
        await apply(full_cluster, ns, pi_mpijob("kf"))
        await apply(full_cluster, ns, t9k_job("tk", runPolicy={"cleanUpWorkers": "all"}))
        await wait_phase(full_cluster, ns, "tk", "Running")
        await finish_launcher(full_cluster, ns, "tk", 0)
        await wait_phase(full_cluster, ns, "tk", "Succeeded")

        async def kubeflow_succeeded() -> bool:
            job = await kubectl_json(full_cluster, "get", KUBEFLOW, "kf", "-n", ns)
            return any(
                c["type"] == "Succeeded" and c["status"] == "True"
                for c in (job.get("status") or {}).get("conditions") or []
            )

        await eventually(kubeflow_succeeded, within=60, interval=0.5, what="Kubeflow job Succeeded")
        # Each controller made only its own children, owned by its own kind.
        kf_pods = await kubectl_json(
            full_cluster, "get", "pods", "-n", ns, "-l", "training.kubeflow.org/job-name=kf"
        )
        assert all(
            p["metadata"]["ownerReferences"][0]["apiVersion"]
            in ("kubeflow.org/v2beta1", "batch/v1")
            for p in kf_pods["items"]
        )
        services = await kubectl_json(full_cluster, "get", "services", "-n", ns)
        owners = {
            s["metadata"]["name"]: s["metadata"]["ownerReferences"][0]["apiVersion"]
            for s in services["items"]
        }
        assert owners == {"kf": "kubeflow.org/v2beta1", "tk": "batch.tensorstack.dev/v1beta1"}
        kf = await kubectl_json(full_cluster, "get", KUBEFLOW, "kf", "-n", ns)
        assert "phase" not in (kf.get("status") or {})
        assert 'workqueue_adds_total{name="t9k-mpijob"}' in _exposition(registry)
        assert 'workqueue_adds_total{name="mpijob"}' in _exposition(registry)
    finally:
        await t9k.stop(drain_seconds=2)
        await kubeflow.stop(drain_seconds=2)
        await client.close()


def _exposition(registry: CollectorRegistry) -> str:
    from prometheus_client import generate_latest

    return generate_latest(registry).decode()


async def test_t9k_example_runs(
    full_cluster: Any, full_namespace: str, operator: T9kMPIJobController
) -> None:
    ns = full_namespace
    example = REPO / "examples" / "t9k" / "pi.yaml"
    await kubectl(full_cluster, "apply", "-n", ns, "-f", str(example))
    await wait_phase(full_cluster, ns, "pi-t9k", "Running")
    await finish_launcher(full_cluster, ns, "pi-t9k", 0)
    await wait_phase(full_cluster, ns, "pi-t9k", "Succeeded")
    # cleanUpWorkers unfinished: the running workers are removed.
    await wait_pods(full_cluster, ns, "pi-t9k", {"pi-t9k-launcher"})


async def test_t9k_deleting_the_job_removes_every_child(
    full_cluster: Any, full_namespace: str, operator: T9kMPIJobController
) -> None:
    ns = full_namespace
    await apply(full_cluster, ns, t9k_job("gone"))
    await wait_phase(full_cluster, ns, "gone", "Running")
    await kubectl(full_cluster, "delete", T9K, "gone", "-n", ns, "--wait=true")

    async def no_children_left() -> bool:
        for kind in ("pods", "services", "configmaps", "secrets"):
            items = await kubectl_json(
                full_cluster, "get", kind, "-n", ns, "-l", "batch.tensorstack.dev/job-name=gone"
            )
            if items["items"]:
                return False
        return True

    await eventually(no_children_left, within=60, interval=0.5, what="children garbage-collected")


@pytest.mark.parametrize("enabled", [True, False])
async def test_t9k_controller_in_the_operator_process_follows_its_flag(
    full_cluster: Any, full_namespace: str, t9k_crds: None, tmp_path: Path, enabled: bool
) -> None:
    """The real ``mpi-operator`` serves T9k MPIJobs when their CRD is installed,
    unless ``--enable-t9k-controller=false``; Kubeflow MPIJobs are served either way."""
    from devcluster.testing import OperatorProcess

    ns = full_namespace
    proc = OperatorProcess(
        [
            f"--kubeConfig={full_cluster.kubeconfig}",
            f"--namespace={ns}",
            f"--lock-namespace={ns}",
            "--kube-api-qps=50",
            "--kube-api-burst=100",
            f"--enable-t9k-controller={str(enabled).lower()}",
        ],
        tmp_path / "operator.log",
    )
    try:
        proc.start()
        await apply(full_cluster, ns, t9k_job("t9k"))
        await apply(full_cluster, ns, pi_mpijob("kf"))

        async def kubeflow_succeeded() -> bool:
            job = await kubectl_json(full_cluster, "get", KUBEFLOW, "kf", "-n", ns)
            return "Succeeded" in conditions(job.get("status") or {})

        await eventually(kubeflow_succeeded, within=90, interval=0.5, what="Kubeflow job done")
        if enabled:
            await wait_phase(full_cluster, ns, "t9k", "Running", within=90)
            await finish_launcher(full_cluster, ns, "t9k", 0)
            await wait_phase(full_cluster, ns, "t9k", "Succeeded", within=90)
        else:
            assert await t9k_status(full_cluster, ns, "t9k") == {}
            assert await pod_names(full_cluster, ns, "t9k") == set()
        assert ("serving T9k MPIJobs" in proc.output()) is enabled
    finally:
        proc.kill()
