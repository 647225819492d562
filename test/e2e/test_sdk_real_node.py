"""The SDK's logs for real, on the ``real`` shape's node: the pi example's launcher log
followed through ``MPIJobClient.logs(follow=True)`` from the launcher's start to its end,
across the launcher's retries, then read again whole; and, for both APIs (Kubeflow and
T9k MPIJobs, run side by side under one operator), a job's pods (``pods``) and every
worker's log in one call (``all_worker_logs``): the workers' sshd logs, each showing the
connection the launcher's ``mpirun`` made to it. Both cases run side by side
(real_examples_support.cases_running), each in a namespace of its own."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
import yaml
from examples_support import EXAMPLES, ROOT, namespaced_operator
from real_examples_support import Case, CaseEnv, cases_running, job_memory

from devcluster import LocalCluster
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

Obj = dict[str, Any]


def _operator(
    cluster: LocalCluster, namespaces: str, tmp_path: Path
) -> AbstractContextManager[OperatorProcess]:
    # The T9k launchers' init container runs the node's t9k-init image (busybox cannot
    # be fetched here).
    return namespaced_operator(cluster, namespaces, tmp_path, f"--t9k-init-image={T9K_INIT_IMAGE}")


def _follow(env: CaseEnv) -> tuple[list[str], Any, list[str]]:
    """pi.yaml through the SDK: its launcher's log followed to its end, the job once it
    Succeeded, then the log read again whole (before its TTL deletes the launcher)."""
    client = MPIJobClient(env.namespace, kubeconfig=env.cluster.kubeconfig)
    job = client.create(on_real_node(load_mpijob(EXAMPLES / "pi" / "pi.yaml")))
    followed = list(client.logs(job.name, follow=True, timeout=240))
    done = client.wait(job.name, "Succeeded", timeout=120)
    whole = list(client.logs(job.name))
    return followed, done, whole


def _kubeflow_job() -> Obj:
    job = load_mpijob(EXAMPLES / "pi" / "pi.yaml")
    job["spec"]["runPolicy"]["cleanPodPolicy"] = "None"
    return job


def _t9k_job() -> Obj:
    (t9k_job,) = [d for d in yaml.safe_load_all(T9K_PI.read_text()) if d]
    t9k_job["spec"]["runPolicy"]["cleanUpWorkers"] = "none"
    # The project's image, whose root sshd listens on 22, where the T9k launcher waits
    # (the public image the example names listens on 2222).
    t9k_job["spec"]["worker"]["template"]["spec"]["containers"][0]["image"] = MPI_IMAGES["openmpi"]
    return t9k_job


def _both_apis(env: CaseEnv) -> dict[str, Obj]:
    """Both examples created side by side; for each API once its job succeeded: the job,
    its pods (all, the workers', the launcher's) and every worker's log; then the job
    deleted."""
    kubeflow = MPIJobClient(env.namespace, kubeconfig=env.cluster.kubeconfig)
    t9k = T9kMPIJobClient(env.namespace, kubeconfig=env.cluster.kubeconfig)
    kubeflow.create(on_real_node(_kubeflow_job()))
    t9k.create(on_real_node(_t9k_job()))
    seen: dict[str, Obj] = {}
    for api, client, name in (("kubeflow", kubeflow, "pi"), ("t9k", t9k, "pi-t9k")):
        done = client.wait(name, "Succeeded", timeout=300)
        seen[api] = {
            "name": name,
            "done": done,
            "pods": client.pods(name),
            "workers": client.pods(name, role="worker"),
            "launchers": client.pods(name, role="launcher"),
            "logs": client.all_worker_logs(name),
        }
        client.delete(name, wait=True)
    return seen


def _cases() -> dict[str, Case[Any]]:
    both = job_memory(_kubeflow_job()) + job_memory(_t9k_job())
    cases: list[Case[Any]] = [
        Case("sdk-follows-the-launchers-log", _follow, job_memory(_kubeflow_job())),
        # Their workers kept until the jobs' deletion, which garbage collection follows.
        Case("sdk-pods-and-worker-logs", _both_apis, both, pods_stay=True),
    ]
    return {case.id: case for case in cases}


#: One test's wait for its case: its own deadlines (the longer's: two jobs' 300 s each),
#: then 60 s for its pods to go, behind at most the other case.
CASE_WAIT = 2 * (2 * 300 + 60)


@pytest.fixture(scope="module")
def runs(
    real_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Case[Any]]]:
    """Both cases at once on the real node, a namespace each, one operator watching them
    (T9k's CRD installed first; the operator stopped cleanly after the module's last
    test); each test waits for its own case and checks what it kept."""
    cases = _cases()
    with cases_running(
        real_cluster,
        list(cases.values()),
        tmp_path_factory.mktemp("sdk-logs"),
        crds=[T9K_CRD],
        operator=_operator,
    ):
        yield cases


def test_sdk_follows_the_launchers_log(runs: dict[str, Case[Any]]) -> None:
    followed, done, whole = runs["sdk-follows-the-launchers-log"].result(CASE_WAIT)
    print("\n".join(followed))
    assert any(PI_RESULT.search(line) for line in followed), followed
    assert state(done) == "Succeeded"
    # Read again whole: the last attempt's log (the launcher Job may have retried an
    # mpirun that started before the workers' names resolved; follow shows every attempt).
    assert whole and followed[-len(whole) :] == whole


def test_pods_and_all_worker_logs_of_both_apis(runs: dict[str, Case[Any]]) -> None:
    """Both examples as written, apart from the real node's placement and the workers kept
    once the job ended (their logs are read then): ``cleanPodPolicy: None`` and
    ``cleanUpWorkers: none``."""
    seen = runs["sdk-pods-and-worker-logs"].result(CASE_WAIT)
    for api in ("kubeflow", "t9k"):
        name, done, pods = seen[api]["name"], seen[api]["done"], seen[api]["pods"]
        assert done.status is not None
        phase = done.status.phase if api == "t9k" else state(done)
        assert phase == "Succeeded", done.status
        workers = [f"{name}-worker-0", f"{name}-worker-1"]
        # The launcher first, then the workers by index; by role, one kind only.
        assert [p.metadata.name for p in pods[1:]] == workers, [p.metadata.name for p in pods]
        assert "launcher" in pods[0].metadata.name, pods[0].metadata.name
        assert [p.metadata.name for p in seen[api]["workers"]] == workers
        assert [p.metadata.name for p in seen[api]["launchers"]] == [pods[0].metadata.name]
        logs = seen[api]["logs"]
        print("\n".join(f"--- {pod} ---\n{text}" for pod, text in logs.items()))
        assert list(logs) == workers
        for pod, text in logs.items():
            assert SSHD_LISTENING.search(text), (pod, text)
            assert SSHD_ACCEPTED.search(text), (pod, text)
