"""patch, update, pods and all_worker_logs, on a loopback fake API server."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import FakeApi, Request
from kubernetes.client import ApiClient, Configuration

from mpi_operator.sdk import (
    ConflictError,
    InvalidArgumentError,
    MPIJobClient,
    T9kMPIJobClient,
    v2beta1,
)

JOBS = "/apis/kubeflow.org/v2beta1/namespaces/ns/mpijobs"


def _client(api: FakeApi, kind: type[Any] = MPIJobClient) -> Any:
    configuration = Configuration(host=api.url)
    configuration.retries = 0
    return kind("ns", api_client=ApiClient(configuration))


def _job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": "ns", "resourceVersion": "7"},
        "spec": spec,
    }


def test_patch_sends_a_strict_merge_patch(fake_api: FakeApi) -> None:
    fake_api.answer = lambda request: (200, _job(runPolicy={"backoffLimit": 3}))
    job = _client(fake_api).patch("pi", {"spec": {"runPolicy": {"backoffLimit": 3}}})
    assert job.spec.run_policy.backoff_limit == 3
    (sent,) = fake_api.requests
    assert (sent.method, sent.path) == ("PATCH", f"{JOBS}/pi")
    assert sent.headers["Content-Type"] == "application/merge-patch+json"
    assert sent.query["fieldValidation"] == ["Strict"]
    assert sent.body == {"spec": {"runPolicy": {"backoffLimit": 3}}}


def test_update_replaces_the_job_and_a_stale_one_conflicts(fake_api: FakeApi) -> None:
    def answer(request: Request) -> tuple[int, Any]:
        if request.body["metadata"]["resourceVersion"] != "7":
            status = {"kind": "Status", "code": 409, "reason": "Conflict", "message": "changed"}
            return 409, status
        return 200, {
            **request.body,
            "metadata": {**request.body["metadata"], "resourceVersion": "8"},
        }

    fake_api.answer = answer
    client = _client(fake_api)
    job = v2beta1.MPIJob.from_dict(_job(slotsPerWorker=1))
    job.spec.slots_per_worker = 4
    updated = client.update(job)
    assert updated.spec.slots_per_worker == 4 and updated.metadata["resourceVersion"] == "8"
    sent = fake_api.requests[0]
    assert (sent.method, sent.path) == ("PUT", f"{JOBS}/pi")
    assert sent.query["fieldValidation"] == ["Strict"]
    stale = _job(slotsPerWorker=2)
    stale["metadata"]["resourceVersion"] = "6"
    with pytest.raises(ConflictError):
        client.update(stale)
    with pytest.raises(InvalidArgumentError, match=r"no metadata\.name"):
        client.update({"spec": {}})


def _pod(name: str, phase: str = "Running") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"containers": [{"name": "main", "image": "i"}]},
        "status": {"phase": phase},
    }


def _pods_and_logs(request: Request) -> tuple[int, Any]:
    if request.path.endswith("/log"):
        return 200, f"log of {request.path.split('/')[-2]}\n"
    selector = request.query["labelSelector"][0]
    pods = [_pod("pi-worker-10"), _pod("pi-worker-2"), _pod("pi-worker-3", "Pending")]
    if "role=worker" not in selector and "replica-type=worker" not in selector:
        pods.append(_pod("pi-launcher-abcde"))
    return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": pods}


def test_pods_lists_the_jobs_pods_launcher_first(fake_api: FakeApi) -> None:
    fake_api.answer = _pods_and_logs
    client = _client(fake_api)
    assert [p.metadata.name for p in client.pods("pi")] == [
        "pi-launcher-abcde",
        "pi-worker-2",
        "pi-worker-3",
        "pi-worker-10",
    ]
    assert fake_api.requests[0].query["labelSelector"] == ["training.kubeflow.org/job-name=pi"]
    client.pods("pi", role="worker")
    assert fake_api.requests[1].query["labelSelector"] == [
        "training.kubeflow.org/job-name=pi,training.kubeflow.org/job-role=worker"
    ]
    with pytest.raises(InvalidArgumentError, match="one of launcher, worker"):
        client.pods("pi", role="workers")


def test_all_worker_logs_reads_every_started_worker(fake_api: FakeApi) -> None:
    fake_api.answer = _pods_and_logs
    logs = _client(fake_api, T9kMPIJobClient).all_worker_logs("pi")
    assert logs == {"pi-worker-2": "log of pi-worker-2\n", "pi-worker-10": "log of pi-worker-10\n"}
    listing = fake_api.requests[0]
    assert listing.query["labelSelector"] == [
        "batch.tensorstack.dev/job-name=pi,batch.tensorstack.dev/replica-type=worker"
    ]
