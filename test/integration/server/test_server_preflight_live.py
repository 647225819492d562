"""Start-up checks of the mpi-operator process against a real API server with RBAC:
a missing CRD, missing list/watch rights, and the reference operator's ClusterRole
being enough."""

from __future__ import annotations

import json
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster import API, BinariesMissingError, LocalCluster
from devcluster.testing import StartOperator, wait_until

WATCHED = ("mpijobs", "pods", "jobs", "services", "configmaps", "secrets")
GROUPS = {"mpijobs": "kubeflow.org", "jobs": "batch"}

# The rules of the reference operator's ClusterRole (deploy/v2beta1/mpi-operator.yaml).
UPSTREAM_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": [""],
        "resources": ["configmaps", "secrets", "services"],
        "verbs": ["create", "list", "watch", "update"],
    },
    {
        "apiGroups": [""],
        "resources": ["pods"],
        "verbs": ["create", "get", "list", "watch", "delete", "update", "patch"],
    },
    {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["endpoints"], "verbs": ["create", "get", "update"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "list", "update", "watch"]},
    {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["create", "get"],
    },
    {
        "apiGroups": ["kubeflow.org"],
        "resources": ["mpijobs", "mpijobs/finalizers", "mpijobs/status"],
        "verbs": ["*"],
    },
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]},
    {
        "apiGroups": [
            "scheduling.incubator.k8s.io",
            "scheduling.sigs.dev",
            "scheduling.volcano.sh",
        ],
        "resources": ["queues", "podgroups"],
        "verbs": ["*"],
    },
    {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"], "verbs": ["*"]},
    {
        "apiGroups": ["scheduling.k8s.io"],
        "resources": ["priorityclasses"],
        "verbs": ["get", "list", "watch"],
    },
]


def _apply(cluster: LocalCluster, *objs: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objs))


def _token_kubeconfig(cluster: LocalCluster, namespace: str, sa: str, path: Path) -> Path:
    """A kubeconfig for the API server that authenticates as ServiceAccount ``sa``."""
    _apply(
        cluster,
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": sa, "namespace": namespace},
        },
    )
    token = cluster.kubectl("create", "token", sa, "-n", namespace, "--duration=1h").stdout.strip()
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"] = [{"name": "admin", "user": {"token": token}}]
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def _role(namespace: str, name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": rules,
    }


def _binding(namespace: str, name: str, role_kind: str, role: str, sa: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}],
    }


def _rule(resource: str, verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": [GROUPS.get(resource, "")], "resources": [resource], "verbs": verbs}


def _operator_args(kubeconfig: Path, namespace: str | None, lock_namespace: str) -> list[str]:
    args = [f"--kubeConfig={kubeconfig}", f"--lock-namespace={lock_namespace}"]
    if namespace:
        args.append(f"--namespace={namespace}")
    return args


def _error_events(output: str) -> list[str]:
    events = []
    for line in output.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("level") == "error":
            events.append(record["event"])
    return events


def test_service_account_without_rights_exits_1_naming_the_resource(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator, tmp_path: Path
) -> None:
    kubeconfig = _token_kubeconfig(api_cluster, namespace, "nobody", tmp_path / "kubeconfig")
    proc = start_operator(*_operator_args(kubeconfig, None, namespace))
    assert proc.wait(timeout=30) == 1
    errors = _error_events(proc.output())
    assert len(errors) == 1, errors
    assert errors[0].startswith("RBAC forbids listing ")
    assert "in all namespaces" in errors[0]
    assert any(f"{r}." in errors[0] for r in WATCHED)


def test_missing_list_right_on_pods_in_the_watched_namespace(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator, tmp_path: Path
) -> None:
    rules = [_rule(r, ["list", "watch"]) for r in WATCHED if r != "pods"]
    _apply(
        api_cluster,
        _role(namespace, "almost", rules),
        _binding(namespace, "almost", "Role", "almost", "op"),
    )
    kubeconfig = _token_kubeconfig(api_cluster, namespace, "op", tmp_path / "kubeconfig")
    proc = start_operator(*_operator_args(kubeconfig, namespace, namespace))
    assert proc.wait(timeout=30) == 1
    [message] = _error_events(proc.output())
    assert message.startswith(f"RBAC forbids listing pods.core in namespace '{namespace}'"), message


def test_missing_watch_right_is_reported(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator, tmp_path: Path
) -> None:
    rules = [_rule(r, ["list"] if r == "secrets" else ["list", "watch"]) for r in WATCHED]
    _apply(
        api_cluster,
        _role(namespace, "nowatch", rules),
        _binding(namespace, "nowatch", "Role", "nowatch", "op"),
    )
    kubeconfig = _token_kubeconfig(api_cluster, namespace, "op", tmp_path / "kubeconfig")
    proc = start_operator(*_operator_args(kubeconfig, namespace, namespace))
    assert proc.wait(timeout=30) == 1
    [message] = _error_events(proc.output())
    assert message.startswith(f"RBAC forbids watching secrets.core in namespace '{namespace}'"), (
        message
    )


@pytest.fixture
def upstream_cluster_role(api_cluster: LocalCluster) -> Iterator[str]:
    name = f"mpi-operator-test-{uuid.uuid4().hex[:8]}"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": UPSTREAM_RULES,
    }
    _apply(api_cluster, role)
    try:
        yield name
    finally:
        api_cluster.kubectl("delete", "clusterrole", name, "--ignore-not-found", check=False)


def test_reference_cluster_role_is_enough(
    api_cluster: LocalCluster,
    namespace: str,
    start_operator: StartOperator,
    tmp_path: Path,
    upstream_cluster_role: str,
) -> None:
    _apply(api_cluster, _binding(namespace, "operator", "ClusterRole", upstream_cluster_role, "op"))
    kubeconfig = _token_kubeconfig(api_cluster, namespace, "op", tmp_path / "kubeconfig")
    proc = start_operator(*_operator_args(kubeconfig, namespace, namespace))

    def leading() -> bool:
        assert proc.poll() is None, proc.output()
        return "mpi_operator_is_leader 1.0" in proc.metrics()

    wait_until(leading, 30, "leadership with the reference ClusterRole")
    wait_until(
        lambda: any(r.get("event") == "controller started" for r in proc.records()),
        30,
        "controller started",
    )
    proc.signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert _error_events(proc.output()) == []


@pytest.fixture(scope="module")
def cluster_without_crd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("no-crd-cluster"), API, crd_files=[])
    try:
        _ = cluster.bins
    except BinariesMissingError as e:
        pytest.fail(str(e), pytrace=False)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def test_missing_crd_exits_1(
    cluster_without_crd: LocalCluster, start_operator: StartOperator
) -> None:
    proc = start_operator(
        f"--kubeConfig={cluster_without_crd.kubeconfig}", "--lock-namespace=default"
    )
    assert proc.wait(timeout=30) == 1
    [message] = _error_events(proc.output())
    assert "MPIJob CRD (mpijobs.kubeflow.org, version v2beta1) is not installed" in message
