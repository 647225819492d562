"""``--gang-scheduling=workload-api`` on a cluster without the Workload API (the api
shape: its kube-apiserver has neither the feature gates nor the API group).

The process must start and stay healthy (the PodGroup cache is not started while the
API is not served, so nothing lists it in a loop), the T9k controller must run, and each
job that needs a PodGroup gets a ``SyncFailed`` Warning naming the API group and how
to enable it, after its other children (Service, ConfigMap, Secret) are made.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from devcluster import LocalCluster
from devcluster.crds import crds_installed
from devcluster.testing import StartOperator, wait_until

T9K_CRD = Path(__file__).resolve().parents[3] / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"
API_GROUP = "scheduling.k8s.io/v1alpha2"


def _kubeflow_job() -> dict[str, Any]:
    container = {"name": "main", "image": "x"}
    template = {"spec": {"containers": [container]}}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "kf"},
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": template},
                "Worker": {"replicas": 2, "template": template},
            }
        },
    }


def _t9k_job() -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "mpi-worker", "image": "x"}]}}
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": "tk"},
        "spec": {"worker": {"replicas": 2, "cmd": ["./pi"], "template": template}},
    }


def _warnings(cluster: LocalCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    out = cluster.kubectl("get", "events", "-n", namespace, "-o", "json").stdout
    return [
        e
        for e in json.loads(out)["items"]
        if e["involvedObject"]["name"] == name and e["type"] == "Warning"
    ]


def _sync_failed_naming_the_api(cluster: LocalCluster, namespace: str, name: str) -> str:
    found: list[str] = []

    def check() -> bool:
        found[:] = [
            e["message"]
            for e in _warnings(cluster, namespace, name)
            if e["reason"] == "SyncFailed" and API_GROUP in e["message"]
        ]
        return bool(found)

    wait_until(check, 60, f"a SyncFailed event naming {API_GROUP} on {name}")
    return found[0]


def test_without_the_workload_api_only_the_jobs_that_need_it_fail(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator
) -> None:
    with crds_installed(api_cluster, (T9K_CRD,)):
        proc = start_operator(
            f"--kubeConfig={api_cluster.kubeconfig}",
            f"--namespace={namespace}",
            f"--lock-namespace={namespace}",
            "--gang-scheduling=workload-api",
        )

        def started() -> bool:
            assert proc.poll() is None, proc.output()
            events = [r.get("event") for r in proc.records()]
            return "controller started" in events and "t9k controller started" in events

        wait_until(started, 60, "both controllers started")
        api_cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(_kubeflow_job()))
        api_cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(_t9k_job()))

        message = _sync_failed_naming_the_api(api_cluster, namespace, "kf")
        assert f"the API group {API_GROUP} (PodGroup) is not served" in message
        assert f"--runtime-config={API_GROUP}=true" in message
        assert "CRD" not in message
        _sync_failed_naming_the_api(api_cluster, namespace, "tk")
        # What the job needs besides the PodGroup is made; nothing else failed it.
        api_cluster.kubectl("get", "service", "kf", "-n", namespace)
        reasons = {e["reason"] for e in _warnings(api_cluster, namespace, "kf")}
        assert reasons == {"SyncFailed"}
        # No informer lists the missing API (it would be stalled and fail /healthz).
        assert proc.healthz()[0] == 200, proc.healthz()
        assert proc.poll() is None
        warned = [r for r in proc.records() if r.get("level") == "warning"]
        assert any(API_GROUP in str(r.get("reason", "")) for r in warned), warned
