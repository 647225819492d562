"""The Python SDK (mpi_operator.sdk) against the real API server: the full local
cluster with the operator as a process, KWOK running the jobs to their end.

KWOK runs no program: where a job should finish, the test annotates its launcher
pod (``complete-after``) as a finishing ``mpirun`` would end it, or builds the job
with that annotation (``sample_jobs.pi_mpijob``).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from examples_support import namespaced_operator, start_operator, stop_operator
from kubernetes.client import ApiClient, Configuration
from t9k_support import t9k_job

from devcluster import COMPLETE_AFTER, LocalCluster
from devcluster.crds import crds_installed
from devcluster.sample_jobs import pi_mpijob
from devcluster.testing import OperatorProcess, wait_until
from mpi_operator.api import t9k, v2beta1
from mpi_operator.sdk import (
    AlreadyExistsError,
    ConflictError,
    ForbiddenError,
    InvalidError,
    InvalidSpecError,
    JobFailedError,
    LogsUnavailableError,
    MPIJobClient,
    NotFoundError,
    SDKConnectionError,
    SDKError,
    T9kMPIJobClient,
    WaitTimeoutError,
    state,
)
from mpi_operator.sdk._errors import translated
from mpi_operator.sdk.aio import AsyncMPIJobClient

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "sdk" / "pi.py"
T9K_CRD = ROOT / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"
LAUNCHER = "training.kubeflow.org/job-role=launcher"


@pytest.fixture
def operator(
    full_cluster: LocalCluster, full_namespace: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    with namespaced_operator(full_cluster, full_namespace, tmp_path) as proc:
        yield proc


def _end_launcher(cluster: LocalCluster, namespace: str, selector: str, exit_code: int = 0) -> bool:
    """Annotates the job's launcher pod, once it exists, to end after 1 s."""
    pods = cluster.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "name")
    names = pods.stdout.split()
    if not names:
        return False
    cluster.kubectl(
        "annotate",
        "-n",
        namespace,
        "--overwrite",
        *names,
        f"{COMPLETE_AFTER}=1s",
        f"kwok.mpi-operator.io/exit-code={exit_code}",
    )
    return True


def _kubeconfig_in(cluster: LocalCluster, namespace: str, path: Path) -> Path:
    """The cluster's admin kubeconfig with ``namespace`` as its contexts' namespace."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for context in config["contexts"]:
        context["context"]["namespace"] = namespace
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_sdk_page_holds_the_example_script() -> None:
    page = (ROOT / "docs" / "sdk" / "index.md").read_text()
    assert f"```python\n{SCRIPT.read_text()}```" in page


def test_example_script_runs_the_pi_job(
    full_cluster: LocalCluster, full_namespace: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    """examples/sdk/pi.py, as it is, from the repository's root: creates the pi MPIJob,
    waits for Succeeded, prints the launcher's log (what the node gives), deletes it."""
    ns = full_namespace
    env = {**os.environ, "KUBECONFIG": str(_kubeconfig_in(full_cluster, ns, tmp_path / "kc"))}
    log = tmp_path / "script.out"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(SCRIPT)], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        selector = f"training.kubeflow.org/job-name=pi,{LAUNCHER}"
        wait_until(lambda: _end_launcher(full_cluster, ns, selector), 90, "the launcher pod")
        code = proc.wait(timeout=180)
    finally:
        proc.kill()
        proc.wait()
    text = log.read_text()
    print(text)
    assert code == 0, text
    lines = text.splitlines()
    assert lines[0] == f"created {ns}/pi"
    progress = [line.split("] ", 1)[1] for line in lines if line.startswith("[")]
    assert progress[0].startswith(f"MPIJob {ns}/pi: ")
    assert f"MPIJob {ns}/pi: Running: launcher active=1, workers active=2 of 2" in progress
    assert progress[-1].startswith(f"MPIJob {ns}/pi: Succeeded: launcher succeeded=1")
    assert any(line.startswith("succeeded at 20") for line in lines)
    assert lines[-1] == "deleted"
    status, _ = full_cluster.request(
        "GET", f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/pi"
    )
    assert status == 404


def test_create_wait_list_get_delete(
    full_cluster: LocalCluster,
    full_namespace: str,
    operator: OperatorProcess,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ns = full_namespace
    client = MPIJobClient(kubeconfig=full_cluster.kubeconfig, namespace=ns)
    model = v2beta1.MPIJob.from_dict(pi_mpijob("sdk", complete_after="3s"))
    created = client.create(model)
    assert isinstance(created, v2beta1.MPIJob)
    assert (created.namespace, created.name) == (ns, "sdk") and created.uid
    with pytest.raises(AlreadyExistsError):
        client.create(model)

    seen: list[v2beta1.MPIJob] = []
    running = client.wait("sdk", "Running", timeout=60, progress=seen.append)
    assert state(running) == "Running" and seen[-1] is running
    assert running.status is not None and running.status.replica_statuses is not None
    done = client.wait("sdk", v2beta1.ConditionType.SUCCEEDED, timeout=60, progress=True)
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].endswith(f"MPIJob {ns}/sdk: Succeeded: launcher succeeded=1, workers 0 of 2")
    assert done.status is not None and done.status.completion_time
    assert [j.name for j in client.list()] == ["sdk"]
    assert "sdk" in [j.name for j in client.list(all_namespaces=True) if j.namespace == ns]
    assert client.get("sdk").status == done.status

    client.delete("sdk", wait=True)
    with pytest.raises(NotFoundError):
        client.get("sdk")
    with pytest.raises(NotFoundError):
        client.delete("sdk")
    client.delete("sdk", missing_ok=True)
    with pytest.raises(NotFoundError):
        client.wait("sdk", "Succeeded", timeout=5)


def test_wait_raises_on_failure_and_on_timeout(
    full_cluster: LocalCluster, full_namespace: str, operator: OperatorProcess
) -> None:
    client = MPIJobClient(full_namespace, kubeconfig=full_cluster.kubeconfig)
    client.create(pi_mpijob("fails", launcher_exit=3, complete_after="2s"))
    client.create(pi_mpijob("forever", launcher_exit=None))
    with pytest.raises(JobFailedError) as failed:
        client.wait("fails", "Succeeded", timeout=90)
    assert state(failed.value.job) == "Failed"
    assert "fails failed: Failed: launcher failed=1" in str(failed.value)
    assert state(client.wait("fails", "Failed", timeout=5)) == "Failed"

    client.wait("forever", "Running", timeout=60)
    started = time.monotonic()
    with pytest.raises(WaitTimeoutError) as late:
        client.wait("forever", "Succeeded", timeout=3)
    assert 3 <= time.monotonic() - started < 15
    assert state(late.value.job) == "Running"
    assert "not Succeeded after 3s: Running" in str(late.value)
    with pytest.raises(ValueError, match="has no condition 'Done'"):
        client.wait("forever", "Done")


async def test_async_client(
    full_cluster: LocalCluster, full_namespace: str, operator: OperatorProcess
) -> None:
    client = AsyncMPIJobClient(full_namespace, kubeconfig=full_cluster.kubeconfig)
    await client.create(pi_mpijob("aio", complete_after="2s"))
    async with asyncio.timeout(60):
        done = await client.wait("aio", "Succeeded", interval=0.5)
    assert state(done) == "Succeeded"
    assert [j.name for j in await client.list()] == ["aio"]
    await client.delete("aio", wait=True)
    with pytest.raises(NotFoundError):
        await client.get("aio")


def test_t9k_job_through_the_sdk(
    full_cluster: LocalCluster, full_namespace: str, tmp_path: Path
) -> None:
    ns = full_namespace
    with crds_installed(full_cluster, (T9K_CRD,)):
        proc = start_operator(
            tmp_path, full_cluster.kubeconfig, f"--namespace={ns}", f"--lock-namespace={ns}"
        )
        try:
            client = T9kMPIJobClient(ns, kubeconfig=full_cluster.kubeconfig)
            created = client.create(t9k_job("pi"))
            assert isinstance(created, t9k.MPIJob)
            running = client.wait("pi", "Running", timeout=60)
            assert running.status is not None and running.status.aggregate is not None
            assert running.status.aggregate.running == 3
            selector = (
                "batch.tensorstack.dev/job-name=pi,batch.tensorstack.dev/replica-type=launcher"
            )
            assert _end_launcher(full_cluster, ns, selector)
            done = client.wait("pi", "Succeeded", timeout=60)
            assert done.status is not None and done.status.phase == "Succeeded"
            completed = client.wait("pi", t9k.ConditionType.COMPLETED, timeout=5)
            assert completed.status is not None and completed.status.phase == "Succeeded"
            assert [j.name for j in client.list()] == ["pi"]
            with pytest.raises(ValueError, match=r"creates batch\.tensorstack\.dev/v1beta1 MPIJob"):
                client.create(pi_mpijob("kubeflow"))
            client.delete("pi", wait=True)
            stop_operator(proc)
        finally:
            proc.kill()
            print(f"--- operator log ---\n{proc.output()[-6000:]}")


def test_invalid_names_the_field(api_cluster: LocalCluster, namespace: str) -> None:
    client = MPIJobClient(namespace, kubeconfig=api_cluster.kubeconfig)
    job: dict[str, Any] = pi_mpijob("bad")
    job["spec"]["runPolicy"]["cleanPodPolicy"] = "Sometimes"
    # The SDK refuses a bad enum before any request, naming the field...
    with pytest.raises(InvalidSpecError) as refused:
        client.create(job)
    assert refused.value.fields == ["spec.runPolicy.cleanPodPolicy"]
    # ...as the API server does when the SDK is not in the way (the CRD's enum).
    body = {**job, "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob"}
    with pytest.raises(InvalidError) as invalid, translated():
        client.custom_objects.create_namespaced_custom_object(
            "kubeflow.org", "v2beta1", namespace, "mpijobs", body
        )
    error = invalid.value
    assert error.status == 422 and error.reason == "Invalid"
    assert error.fields == ["spec.runPolicy.cleanPodPolicy"]
    assert 'Unsupported value: "Sometimes"' in error.causes[0].message
    # A CEL rule of the CRD names its field too.
    job = pi_mpijob("bad")
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"] = 2
    with pytest.raises(InvalidError) as invalid:
        client.create(job)
    assert invalid.value.fields, invalid.value.causes
    assert all("Launcher" in f or "mpiReplicaSpecs" in f for f in invalid.value.fields), (
        invalid.value.causes
    )
    with pytest.raises(NotFoundError):
        client.get("bad")
    dry = client.create(pi_mpijob("dry"), dry_run=True)
    assert dry.name == "dry"
    assert client.list() == []


def test_strict_field_validation_patch_update_and_pods(
    api_cluster: LocalCluster, namespace: str
) -> None:
    """A typo in a pod template, where the models do not look, is refused by the API
    server's strict field validation (not dropped), as an InvalidSpecError naming it; a
    patch and an update are validated the same way; a job without pods has none."""
    client = MPIJobClient(namespace, kubeconfig=api_cluster.kubeconfig)
    typo: dict[str, Any] = pi_mpijob("typo")
    typo["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["imagee"] = "x"
    with pytest.raises(InvalidSpecError) as refused:
        client.create(typo)
    assert refused.value.fields == [
        "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].imagee"
    ]
    with pytest.raises(NotFoundError):
        client.get("typo")
    client.create(pi_mpijob("pi"))
    patched = client.patch("pi", {"spec": {"runPolicy": {"backoffLimit": 3}}})
    assert patched.spec.run_policy.backoff_limit == 3
    with pytest.raises(InvalidSpecError) as refused:
        client.patch("pi", {"spec": {"runPolicy": {"backofLimit": 3}}})
    assert refused.value.fields == ["spec.runPolicy.backofLimit"]
    job = client.get("pi")
    job.spec.slots_per_worker = 2
    assert client.update(job).spec.slots_per_worker == 2
    with pytest.raises(ConflictError):
        client.update(job)  # its resourceVersion is now stale
    assert client.get("pi").spec.run_policy.backoff_limit == 3
    assert client.pods("pi") == []
    assert client.all_worker_logs("pi") == {}
    client.delete("pi", wait=True)


def test_forbidden_without_rights(
    api_cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    api_cluster.kubectl("create", "serviceaccount", "nobody", "-n", namespace)
    kubeconfig = api_cluster.token_kubeconfig(namespace, "nobody", tmp_path / "kubeconfig")
    client = MPIJobClient(namespace, kubeconfig=kubeconfig)
    account = f"system:serviceaccount:{namespace}:nobody"
    with pytest.raises(ForbiddenError) as denied:
        client.list()
    assert denied.value.status == 403
    assert f'User "{account}" cannot list resource "mpijobs"' in denied.value.message
    for call in (
        lambda: client.create(pi_mpijob("x")),
        lambda: client.get("x"),
        lambda: client.wait("x", timeout=5),
        lambda: client.delete("x"),
    ):
        with pytest.raises(ForbiddenError):
            call()


def test_each_mistake_raises_its_documented_error(
    api_cluster: LocalCluster, namespace: str
) -> None:
    """The table of docs/sdk/index.md against the real API server: an unknown field and
    a bad enum are refused before any request, an unreachable server and a missing job
    come back as the SDK's errors, and every one is an SDKError."""
    client = MPIJobClient(namespace, kubeconfig=api_cluster.kubeconfig)
    unknown: dict[str, Any] = pi_mpijob("unknown")
    unknown["spec"]["slotsPerWorkr"] = 2
    bad_enum: dict[str, Any] = pi_mpijob("bad-enum")
    bad_enum["spec"]["runPolicy"]["cleanPodPolicy"] = "Sometimes"
    configuration = Configuration(host="https://127.0.0.1:1")
    configuration.retries = 0
    nowhere = MPIJobClient(namespace, api_client=ApiClient(configuration))
    mistakes: list[tuple[str, Any, type[SDKError]]] = [
        ("unknown field", lambda: client.create(unknown), InvalidSpecError),
        ("bad enum", lambda: client.create(bad_enum), InvalidSpecError),
        ("unreachable server", lambda: nowhere.get("pi"), SDKConnectionError),
        ("missing job", lambda: client.get("no-such-job"), NotFoundError),
        ("missing job, deleted", lambda: client.delete("no-such-job"), NotFoundError),
    ]
    for what, call, error in mistakes:
        with pytest.raises(error) as raised:
            call()
        assert isinstance(raised.value, SDKError), what
    # Nothing of the refused jobs reached the API server.
    assert client.list() == []


def test_suspend_resume_and_a_missing_workers_log(
    api_cluster: LocalCluster, namespace: str
) -> None:
    """suspend/resume patch the kind's own field (Kubeflow: runPolicy.suspend; T9k:
    runMode.pause), and a worker that does not exist has no log to give."""
    client = MPIJobClient(namespace, kubeconfig=api_cluster.kubeconfig)
    client.create(pi_mpijob("pi"))
    assert client.suspend("pi").spec.run_policy.suspend is True
    assert client.get("pi").spec.run_policy.suspend is True
    assert client.resume("pi").spec.run_policy.suspend is False
    with pytest.raises(LogsUnavailableError, match="worker pod pi-worker-0 does not exist"):
        list(client.worker_logs("pi", 0))
    with pytest.raises(NotFoundError):
        client.suspend("no-such-job")
    with crds_installed(api_cluster, (T9K_CRD,)):
        t9k_client = T9kMPIJobClient(namespace, kubeconfig=api_cluster.kubeconfig)
        t9k_client.create(t9k_job("pi-t9k"))
        paused = t9k_client.suspend("pi-t9k")
        assert paused.spec.run_mode is not None and paused.spec.run_mode.pause is not None
        assert paused.spec.run_mode.pause.is_enabled
        resumed = t9k_client.resume("pi-t9k")
        assert resumed.spec.run_mode is not None and resumed.spec.run_mode.pause is not None
        assert not resumed.spec.run_mode.pause.is_enabled
        t9k_client.delete("pi-t9k", wait=True)
    client.delete("pi", wait=True)
