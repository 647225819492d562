"""Static checks of the install manifests (deploy/, manifests/): up to date with
crd/, hardened Deployment, least-privilege RBAC. The e2e suite
(test/e2e/test_deploy_dry_run.py, test_deploy_rbac.py) applies them to a real API server."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

import mpi_operator

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy/v2beta1/mpi-operator.yaml"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "generate_deploy", ROOT / "hack/generate_deploy.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("generate_deploy", module)
    spec.loader.exec_module(module)
    return module


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def test_generated_files_are_up_to_date() -> None:
    assert _generator().stale(ROOT) == [], "run `make deploy-manifests` and commit the result"


def test_deploy_file_embeds_the_crd_of_crd_dir() -> None:
    crds = [d for d in _docs(DEPLOY) if d["kind"] == "CustomResourceDefinition"]
    own = _docs(ROOT / "crd/kubeflow.org_mpijobs.yaml")
    assert crds == own


def test_deploy_file_contents() -> None:
    docs = _docs(DEPLOY)
    kinds = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert kinds[0] == ("Namespace", "mpi-operator")
    assert kinds[1] == ("CustomResourceDefinition", "mpijobs.kubeflow.org")
    assert kinds[-1] == ("Deployment", "mpi-operator")
    for kind, name in [
        ("ServiceAccount", "mpi-operator"),
        ("ClusterRole", "mpi-operator"),
        ("ClusterRoleBinding", "mpi-operator"),
        ("Role", "mpi-operator-leader-election"),
        ("RoleBinding", "mpi-operator-leader-election"),
        ("ClusterRole", "kubeflow-mpijobs-admin"),
        ("ClusterRole", "kubeflow-mpijobs-edit"),
        ("ClusterRole", "kubeflow-mpijobs-view"),
    ]:
        _one(docs, kind, name)
    for d in docs:
        if d["kind"] in ("ServiceAccount", "Role", "RoleBinding", "Deployment"):
            assert d["metadata"]["namespace"] == "mpi-operator"


def test_deployment_is_hardened() -> None:
    deployment = _one(_docs(DEPLOY), "Deployment", "mpi-operator")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "mpi-operator"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    assert container["image"] == f"mpi-operator-python:{mpi_operator.__version__}"
    sc = container["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"healthz": 8080, "metrics": 8081}
    assert "--monitoring-port=8081" in container["args"]
    assert "--healthz-port=8080" in container["args"]
    assert "--lock-namespace=$(POD_NAMESPACE)" in container["args"]
    probe = container["livenessProbe"]["httpGet"]
    assert probe["path"] == "/healthz" and probe["port"] == "healthz"
    assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
    assert {"cpu", "memory"} <= container["resources"]["limits"].keys()
    # The selector is the Go operator's, so applying over it updates in place.
    assert deployment["spec"]["selector"]["matchLabels"] == {
        "app": "mpi-operator",
        "app.kubernetes.io/component": "mpijob",
        "app.kubernetes.io/name": "mpi-operator",
        "kustomize.component": "mpi-operator",
    }


def _grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_operator_cluster_role_is_least_privilege() -> None:
    role = _one(_docs(DEPLOY), "ClusterRole", "mpi-operator")
    grants = _grants(role["rules"])
    assert not any("*" in g for g in grants)
    resources = {(g, r) for g, r, _ in grants}
    for forbidden in [
        ("", "pods/exec"),
        ("", "endpoints"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("coordination.k8s.io", "leases"),  # only in its own namespace, by a Role
        ("scheduling.volcano.sh", "queues"),
        ("", "namespaces"),
    ]:
        assert forbidden not in resources
    assert ("kubeflow.org", "mpijobs", "update") not in grants
    assert ("kubeflow.org", "mpijobs/status", "update") in grants
    assert ("batch", "jobs/status", "update") in grants
    assert ("", "pods", "delete") in grants
    assert ("", "events", "create") in grants


def test_leases_only_by_name_in_the_operator_namespace() -> None:
    role = _one(_docs(DEPLOY), "Role", "mpi-operator-leader-election")
    for rule in role["rules"]:
        assert rule["resources"] == ["leases"]
        if rule["verbs"] != ["create"]:
            assert rule["resourceNames"] == ["mpi-operator"]


def test_namespaced_role_matches_the_cluster_role() -> None:
    cluster = _one(
        _docs(ROOT / "manifests/rbac/cluster/cluster-role.yaml"), "ClusterRole", "mpi-operator"
    )
    namespaced = _one(_docs(ROOT / "manifests/rbac/namespaced/role.yaml"), "Role", "mpi-operator")
    cluster_scoped = {("scheduling.k8s.io", "priorityclasses")}
    expected = {g for g in _grants(cluster["rules"]) if (g[0], g[1]) not in cluster_scoped}
    assert _grants(namespaced["rules"]) == expected
    (binding,) = [
        d for d in _docs(ROOT / "manifests/rbac/namespaced/role.yaml") if d["kind"] == "RoleBinding"
    ]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "mpi-operator",
    }


def test_aggregated_user_roles() -> None:
    docs = _docs(DEPLOY)
    admin = _one(docs, "ClusterRole", "kubeflow-mpijobs-admin")
    edit = _one(docs, "ClusterRole", "kubeflow-mpijobs-edit")
    view = _one(docs, "ClusterRole", "kubeflow-mpijobs-view")
    prefix = "rbac.authorization.kubeflow.org/"
    assert admin["metadata"]["labels"][prefix + "aggregate-to-kubeflow-admin"] == "true"
    assert edit["metadata"]["labels"][prefix + "aggregate-to-kubeflow-edit"] == "true"
    assert view["metadata"]["labels"][prefix + "aggregate-to-kubeflow-view"] == "true"
    selector = admin["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]
    assert edit["metadata"]["labels"].items() >= selector.items()
    assert ("kubeflow.org", "mpijobs", "create") in _grants(edit["rules"])
    assert {v for _, _, v in _grants(view["rules"])} == {"get", "list", "watch"}


def test_base_names_the_image_for_kustomize() -> None:
    kustomization = yaml.safe_load((ROOT / "manifests/base/kustomization.yaml").read_text())
    assert kustomization["images"] == [
        {"name": "mpi-operator-python", "newTag": mpi_operator.__version__}
    ]


def test_t9k_component_rules() -> None:
    """The rules the T9k controller's API calls need, added to the operator's role."""
    ops = yaml.safe_load((ROOT / "manifests/components/t9k/rbac-rules.yaml").read_text())
    assert {(op["op"], op["path"]) for op in ops} == {("add", "/rules/-")}
    assert _grants([op["value"] for op in ops]) == {
        ("batch.tensorstack.dev", "mpijobs", "list"),
        ("batch.tensorstack.dev", "mpijobs", "watch"),
        ("batch.tensorstack.dev", "mpijobs/status", "update"),
        ("batch.tensorstack.dev", "mpijobs/finalizers", "update"),
        ("scheduler.tensorstack.dev", "podgroups", "get"),
        ("scheduler.tensorstack.dev", "podgroups", "list"),
        ("scheduler.tensorstack.dev", "podgroups", "watch"),
        ("scheduler.tensorstack.dev", "podgroups", "create"),
        ("scheduler.tensorstack.dev", "podgroups", "update"),
        ("scheduler.tensorstack.dev", "podgroups", "patch"),
    }
    component = yaml.safe_load((ROOT / "manifests/components/t9k/kustomization.yaml").read_text())
    assert {(p["target"]["kind"], p["target"]["name"]) for p in component["patches"]} == {
        ("ClusterRole", "mpi-operator"),
        ("Role", "mpi-operator"),
    }


def test_monitoring_component_selects_the_operator_pods() -> None:
    deployment = _one(_docs(DEPLOY), "Deployment", "mpi-operator")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    metrics_port = next(p for p in container["ports"] if p["name"] == "metrics")
    component = ROOT / "manifests/components/monitoring"
    service = _one(_docs(component / "service.yaml"), "Service", "mpi-operator-metrics")
    assert service["spec"]["selector"] == pod_labels
    (port,) = service["spec"]["ports"]
    assert port["targetPort"] == "metrics" and port["port"] == metrics_port["containerPort"]
    monitor = _one(_docs(component / "pod-monitor.yaml"), "PodMonitor", "mpi-operator")
    assert monitor["spec"]["selector"]["matchLabels"] == pod_labels
    assert monitor["spec"]["podMetricsEndpoints"] == [
        {"port": "metrics", "path": "/metrics", "interval": "30s"}
    ]
    # kube-prometheus-stack's Prometheus selects PodMonitors by their release label.
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
