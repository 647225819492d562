"""The MPIJob's scale subresource through the real kubectl: ``kubectl scale`` moves the
Worker replicas within the elastic policy's bounds and is refused outside them, naming
the fields and the values; ``--subresource=scale`` reads the replicas and the selector
from where the CRD says."""

from __future__ import annotations

import json
from typing import Any

import yaml
from crd_cases import mpijob

from devcluster import LocalCluster

BOUNDED = {"minReplicas": 1, "maxReplicas": 4}


def _create(cluster: LocalCluster, namespace: str, obj: dict[str, Any]) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=yaml.safe_dump(obj))


def _scale(cluster: LocalCluster, namespace: str, replicas: int) -> tuple[int, str]:
    out = cluster.kubectl(
        "scale", "mpijob/job", "-n", namespace, f"--replicas={replicas}", check=False
    )
    return out.returncode, out.stdout + out.stderr


def _workers(cluster: LocalCluster, namespace: str) -> int:
    out = cluster.kubectl("get", "mpijob", "job", "-n", namespace, "-o", "json")
    replicas: int = json.loads(out.stdout)["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    return replicas


def test_kubectl_scale_moves_the_workers_within_the_elastic_policy(
    api_cluster: LocalCluster, namespace: str
) -> None:
    _create(api_cluster, namespace, mpijob(workers=2, elasticPolicy=BOUNDED))
    code, output = _scale(api_cluster, namespace, 4)
    assert code == 0, output
    assert _workers(api_cluster, namespace) == 4
    code, output = _scale(api_cluster, namespace, 1)
    assert code == 0, output
    assert _workers(api_cluster, namespace) == 1


def test_kubectl_scale_outside_the_elastic_policy_is_refused_naming_the_fields(
    api_cluster: LocalCluster, namespace: str
) -> None:
    _create(
        api_cluster,
        namespace,
        mpijob(workers=2, elasticPolicy={"minReplicas": 2, "maxReplicas": 4}),
    )
    code, output = _scale(api_cluster, namespace, 5)
    assert code != 0
    assert (
        "spec.mpiReplicaSpecs[Worker].replicas must be no more than spec.elasticPolicy.maxReplicas"
    ) in output, output
    code, output = _scale(api_cluster, namespace, 1)
    assert code != 0
    assert (
        "spec.mpiReplicaSpecs[Worker].replicas must be at least spec.elasticPolicy.minReplicas"
    ) in output, output
    assert _workers(api_cluster, namespace) == 2


def test_kubectl_scale_without_a_policy_keeps_the_worker_rules(
    api_cluster: LocalCluster, namespace: str
) -> None:
    """Without an elastic policy a scale is a change of the Worker replicas like an edit:
    allowed, and held to the same rules (at least 1)."""
    _create(api_cluster, namespace, mpijob(workers=2))
    code, output = _scale(api_cluster, namespace, 3)
    assert code == 0, output
    assert _workers(api_cluster, namespace) == 3
    code, output = _scale(api_cluster, namespace, 0)
    assert code != 0
    assert "spec.mpiReplicaSpecs[Worker].replicas must be greater than or equal to 1" in output


def test_the_scale_subresource_reads_the_worker_status(
    api_cluster: LocalCluster, namespace: str
) -> None:
    _create(api_cluster, namespace, mpijob(workers=3, elasticPolicy=BOUNDED))
    selector = "training.kubeflow.org/job-name=job,training.kubeflow.org/replica-type=worker"
    api_cluster.kubectl(
        "patch", "mpijob", "job", "-n", namespace, "--subresource=status", "--type=merge",
        "-p", json.dumps(
            {"status": {"replicaStatuses": {"Worker": {"active": 2, "selector": selector}}}}
        ),
    )  # fmt: skip
    out = api_cluster.kubectl(
        "get", "mpijob", "job", "-n", namespace, "--subresource=scale", "-o", "json"
    )
    scale = json.loads(out.stdout)
    assert scale["kind"] == "Scale"
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"] == {"replicas": 2, "selector": selector}
