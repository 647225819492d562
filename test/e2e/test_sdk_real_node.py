"""The SDK's logs for real, on the ``real`` shape's node: the pi example's launcher log
followed through ``MPIJobClient.logs(follow=True)`` from the launcher's start to its end,
across the launcher's retries, then read again whole; and, for both APIs (Kubeflow and
T9k MPIJobs, run side by side under one operator), a job's pods (``pods``) and every
worker's log in one call (``all_worker_logs``): the workers' sshd logs, each showing the
connection the launcher's ``mpirun`` made to it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from examples_support import EXAMPLES, ROOT, namespaced_operator

from devcluster import LocalCluster
from devcluster.crds import crds_installed
from devcluster.demo_job import load_mpijob
from devcluster.nodeconfig import MPI_IMAGES, T9K_INIT_IMAGE
from devcluster.sample_jobs import on_real_node
from devcluster.testing import OperatorProcess
from mpi_operator.sdk import MPIJobClient, T9kMPIJobClient, state

PI_RESULT = re.compile(r"pi is approximately 3\.14\d+ \(2 ranks")
T9K_CRD = ROOT / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"
T9K_PI = ROOT / "examples" / "t9k" / "pi.yaml"
#: sshd -De's lines: listening, then the launcher's mpirun logged in (public key).
SSHD_LISTENING = re.compile(r"Server listening on \S+ port \d+")
SSHD_ACCEPTED = re.compile(r"Accepted publickey for \w+ from ")


@pytest.fixture
def real_ns(real_cluster: LocalCluster) -> Iterator[str]:
    name = real_cluster.create_namespace("sdk-logs")
    yield name
    real_cluster.delete_namespace(name)


@pytest.fixture
def t9k_crd(real_cluster: LocalCluster) -> Iterator[None]:
    with crds_installed(real_cluster, (T9K_CRD,)):
        yield


@pytest.fixture
def operator(real_cluster: LocalCluster, real_ns: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    # The T9k launchers' init container runs the node's t9k-init image (busybox cannot
    # be fetched here).
    with namespaced_operator(
        real_cluster, real_ns, tmp_path, f"--t9k-init-image={T9K_INIT_IMAGE}"
    ) as proc:
        yield proc


def test_sdk_follows_the_launchers_log(
    real_cluster: LocalCluster, real_ns: str, operator: OperatorProcess
) -> None:
    client = MPIJobClient(real_ns, kubeconfig=real_cluster.kubeconfig)
    job = client.create(on_real_node(load_mpijob(EXAMPLES / "pi" / "pi.yaml")))
    followed = list(client.logs(job.name, follow=True, timeout=240))
    print("\n".join(followed))
    assert any(PI_RESULT.search(line) for line in followed), followed
    done = client.wait(job.name, "Succeeded", timeout=120)
    assert state(done) == "Succeeded"
    # Read again whole: the last attempt's log (the launcher Job may have retried an
    # mpirun that started before the workers' names resolved; follow shows every attempt).
    whole = list(client.logs(job.name))
    assert whole and followed[-len(whole) :] == whole


def test_pods_and_all_worker_logs_of_both_apis(
    real_cluster: LocalCluster, real_ns: str, t9k_crd: None, operator: OperatorProcess
) -> None:
    """Both examples as written, apart from the real node's placement and the workers kept
    once the job ended (their logs are read then): ``cleanPodPolicy: None`` and
    ``cleanUpWorkers: none``."""
    kubeflow = MPIJobClient(real_ns, kubeconfig=real_cluster.kubeconfig)
    t9k = T9kMPIJobClient(real_ns, kubeconfig=real_cluster.kubeconfig)
    job = load_mpijob(EXAMPLES / "pi" / "pi.yaml")
    job["spec"]["runPolicy"]["cleanPodPolicy"] = "None"
    kubeflow.create(on_real_node(job))
    (t9k_job,) = [d for d in yaml.safe_load_all(T9K_PI.read_text()) if d]
    t9k_job["spec"]["runPolicy"]["cleanUpWorkers"] = "none"
    # The project's image, whose root sshd listens on 22, where the T9k launcher waits
    # (the public image the example names listens on 2222).
    t9k_job["spec"]["worker"]["template"]["spec"]["containers"][0]["image"] = MPI_IMAGES["openmpi"]
    t9k.create(on_real_node(t9k_job))
    for client, name in ((kubeflow, "pi"), (t9k, "pi-t9k")):
        done = client.wait(name, "Succeeded", timeout=300)
        assert done.status is not None
        phase = done.status.phase if client is t9k else state(done)
        assert phase == "Succeeded", done.status
        pods = client.pods(name)
        workers = [f"{name}-worker-0", f"{name}-worker-1"]
        # The launcher first, then the workers by index; by role, one kind only.
        assert [p.metadata.name for p in pods[1:]] == workers, [p.metadata.name for p in pods]
        assert "launcher" in pods[0].metadata.name, pods[0].metadata.name
        assert [p.metadata.name for p in client.pods(name, role="worker")] == workers
        assert [p.metadata.name for p in client.pods(name, role="launcher")] == [
            pods[0].metadata.name
        ]
        logs = client.all_worker_logs(name)
        print("\n".join(f"--- {pod} ---\n{text}" for pod, text in logs.items()))
        assert list(logs) == workers
        for pod, text in logs.items():
            assert SSHD_LISTENING.search(text), (pod, text)
            assert SSHD_ACCEPTED.search(text), (pod, text)
        client.delete(name, wait=True)
