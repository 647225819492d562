"""The install manifests through a real API server's dry run.

deploy/v2beta1/mpi-operator.yaml and every kustomize overlay (standalone, kubeflow,
namespaced, t9k, monitoring; the t9k component on the namespaced overlay; an image set
by a user's kustomization) pass a server-side dry run, the PodMonitor against a minimal
CRD of its own; the standalone overlay builds to exactly the single file; so do
deploy/monitoring's kube-state-metrics RBAC and ConfigMap. (test_deploy_rbac.py runs
the operator under the manifests' RBAC.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import COMPONENTS, OVERLAYS, T9K_CRD_NAME, kustomize, user_kustomization
from examples_support import (
    DEPLOY,
    ROOT,
    docs,
)

from devcluster import LocalCluster

MONITORING = ROOT / "deploy" / "monitoring"
T9K_GROUPS = {"batch.tensorstack.dev", "scheduler.tensorstack.dev"}
# The Prometheus Operator's PodMonitor, reduced to a structural schema that keeps
# everything: enough for the API server to serve (and dry-run) the monitoring overlay.
POD_MONITOR_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "podmonitors.monitoring.coreos.com"},
    "spec": {
        "group": "monitoring.coreos.com",
        "names": {
            "kind": "PodMonitor",
            "listKind": "PodMonitorList",
            "plural": "podmonitors",
            "singular": "podmonitor",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}
# Over this size the last-applied annotation of a client-side apply is too long.
CLIENT_SIDE_APPLY_LIMIT = 262144


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def _ensure_namespace(cluster: LocalCluster, name: str) -> None:
    cluster.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def _server_dry_run(cluster: LocalCluster, objects: list[dict[str, Any]]) -> str:
    return cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--dry-run=server",
        "-f",
        "-",
        input=yaml.safe_dump_all(objects),
    ).stdout


def _t9k_grants(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        if group in T9K_GROUPS
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def _t9k_component_grants() -> set[tuple[str, str, str]]:
    """What the t9k component's rules patch grants (its literal rules are pinned by
    test/unit/test_deploy_manifests.py); the built role must carry exactly those."""
    ops = yaml.safe_load((COMPONENTS / "t9k" / "rbac-rules.yaml").read_text())
    return _t9k_grants({"rules": [op["value"] for op in ops]})


T9K_GRANTS = _t9k_component_grants()


@pytest.fixture
def pod_monitor_crd(api_cluster: LocalCluster) -> Iterator[None]:
    name = POD_MONITOR_CRD["metadata"]["name"]  # type: ignore[index]
    preinstalled = api_cluster.kubectl("get", "crd", name, check=False).returncode == 0
    api_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(POD_MONITOR_CRD))
    api_cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    try:
        yield
    finally:
        if not preinstalled:
            api_cluster.kubectl("delete", "crd", name, "--ignore-not-found", "--wait=false")


# -- the manifests on an API server ------------------------------------------------------


def test_deploy_file_passes_a_server_dry_run(api_cluster: LocalCluster) -> None:
    # A dry run creates nothing, so the namespaced objects need their namespace.
    _ensure_namespace(api_cluster, "mpi-operator")
    out = api_cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", str(DEPLOY)
    ).stdout
    for kind, _, name in map(_key, docs(DEPLOY)):
        assert name in out, f"{kind}/{name} missing from: {out}"


def test_client_side_apply(api_cluster: LocalCluster) -> None:
    """Plain ``kubectl apply -f`` takes everything but a CRD whose JSON exceeds the
    limit of the last-applied annotation: hence ``--server-side`` in the docs."""
    _ensure_namespace(api_cluster, "mpi-operator")
    objects = docs(DEPLOY)
    crd = next(o for o in objects if o["kind"] == "CustomResourceDefinition")
    rest = [o for o in objects if o is not crd]
    out = api_cluster.kubectl(
        "apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(rest)
    ).stdout
    for kind, _, name in map(_key, rest):
        assert name in out, f"{kind}/{name} missing from: {out}"
    result = api_cluster.kubectl(
        "apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(crd), check=False
    )
    if len(json.dumps(crd)) > CLIENT_SIDE_APPLY_LIMIT:
        assert result.returncode != 0 and "Too long" in result.stderr, result
    else:
        assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("overlay", ["standalone", "kubeflow", "namespaced", "t9k", "monitoring"])
def test_overlay_builds_and_passes_a_server_dry_run(
    api_cluster: LocalCluster, pod_monitor_crd: None, overlay: str
) -> None:
    objects = kustomize(api_cluster, OVERLAYS / overlay)
    namespace = "kubeflow" if overlay == "kubeflow" else "mpi-operator"
    _ensure_namespace(api_cluster, namespace)
    for obj in objects:
        if obj["kind"] in ("ServiceAccount", "Role", "RoleBinding", "Deployment"):
            assert obj["metadata"]["namespace"] == namespace
        for subject in obj.get("subjects") or []:
            assert subject["namespace"] == namespace
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    kinds = {o["kind"] for o in objects}
    if overlay == "namespaced":
        assert "--namespace=$(POD_NAMESPACE)" in args
        assert "ClusterRoleBinding" not in kinds
        role = next(
            o for o in objects if o["kind"] == "Role" and o["metadata"]["name"] == "mpi-operator"
        )
        assert role["metadata"]["namespace"] == namespace
    else:
        assert not any(a.startswith("--namespace") for a in args)
        assert "ClusterRoleBinding" in kinds
    role = (
        next(
            o
            for o in objects
            if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "mpi-operator"
        )
        if overlay != "namespaced"
        else None
    )
    crds = {o["metadata"]["name"] for o in objects if o["kind"] == "CustomResourceDefinition"}
    if overlay == "t9k":
        assert crds == {"mpijobs.kubeflow.org", T9K_CRD_NAME}
        assert role is not None and _t9k_grants(role) == T9K_GRANTS
    else:
        assert crds == {"mpijobs.kubeflow.org"}
        assert role is None or _t9k_grants(role) == set()
    monitors = [o for o in objects if o["kind"] in ("PodMonitor", "Service")]
    if overlay == "monitoring":
        assert {(o["kind"], o["metadata"]["namespace"]) for o in monitors} == {
            ("PodMonitor", namespace),
            ("Service", namespace),
        }
    else:
        assert monitors == []
    out = _server_dry_run(api_cluster, objects)
    for kind, _, name in map(_key, objects):
        assert name in out, f"{kind}/{name} missing from: {out}"


def test_t9k_component_on_the_namespaced_overlay(api_cluster: LocalCluster, tmp_path: Path) -> None:
    """The component's rules go to the operator's Role when there is no ClusterRole."""
    kustomization_dir = user_kustomization(
        tmp_path, resources=[OVERLAYS / "namespaced"], components=[COMPONENTS / "t9k"]
    )
    objects = kustomize(api_cluster, kustomization_dir)
    role = next(
        o for o in objects if o["kind"] == "Role" and o["metadata"]["name"] == "mpi-operator"
    )
    assert _t9k_grants(role) == T9K_GRANTS
    assert not [
        o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "mpi-operator"
    ]
    assert T9K_CRD_NAME in {o["metadata"]["name"] for o in objects}
    _ensure_namespace(api_cluster, "mpi-operator")
    _server_dry_run(api_cluster, objects)


def test_users_kustomization_sets_the_image(api_cluster: LocalCluster, tmp_path: Path) -> None:
    """The documented install (docs/install.md): a kustomization of one's own with an `images:` entry."""
    kustomization_dir = user_kustomization(
        tmp_path,
        resources=[OVERLAYS / "standalone"],
        images=[
            {
                "name": "mpi-operator-python",
                "newName": "registry.example.org/team/mpi-operator-python",
                "newTag": "0.1.0",
            }
        ],
    )
    objects = kustomize(api_cluster, kustomization_dir)
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example.org/team/mpi-operator-python:0.1.0"
    _ensure_namespace(api_cluster, "mpi-operator")
    _server_dry_run(api_cluster, objects)


def test_kube_state_metrics_files_pass_a_server_dry_run(api_cluster: LocalCluster) -> None:
    """The commands of docs/operations/monitoring.md for kube-state-metrics: its RBAC, and its configuration as a
    ConfigMap (kube-system stands for the namespace kube-state-metrics runs in)."""
    out = api_cluster.kubectl(
        "apply", "--dry-run=server", "-f", str(MONITORING / "kube-state-metrics-rbac.yaml")
    ).stdout
    assert "clusterrole.rbac.authorization.k8s.io/kube-state-metrics-mpijobs" in out
    out = api_cluster.kubectl(
        "create",
        "configmap",
        "kube-state-metrics-mpijobs",
        "--namespace=kube-system",
        f"--from-file={MONITORING / 'kube-state-metrics.yaml'}",
        "--dry-run=server",
        "-o",
        "yaml",
    ).stdout
    data = yaml.safe_load(out)["data"]
    assert data["kube-state-metrics.yaml"] == (MONITORING / "kube-state-metrics.yaml").read_text()


def test_standalone_overlay_is_the_single_file(api_cluster: LocalCluster) -> None:
    built = {_key(o): o for o in kustomize(api_cluster, OVERLAYS / "standalone")}
    single = {_key(o): o for o in docs(DEPLOY)}
    assert built.keys() == single.keys()
    for key, obj in single.items():
        assert built[key] == obj, key


# -- the operator under its own ServiceAccount --------------------------------------------


def test_pod_monitor_release_label_is_set_by_a_patch(
    api_cluster: LocalCluster, pod_monitor_crd: None, tmp_path: Path
) -> None:
    """docs/operations/monitoring.md: kube-prometheus-stack selects PodMonitors by their
    `release` label; a user's kustomization sets its value with a JSON patch."""
    default = next(
        o for o in kustomize(api_cluster, OVERLAYS / "monitoring") if o["kind"] == "PodMonitor"
    )
    assert default["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    kustomization_dir = user_kustomization(
        tmp_path,
        resources=[OVERLAYS / "monitoring"],
        patches=[
            {
                "target": {"kind": "PodMonitor", "name": "mpi-operator"},
                "patch": '[{"op": "replace", "path": "/metadata/labels/release", "value": "my-release"}]',
            }
        ],
    )
    objects = kustomize(api_cluster, kustomization_dir)
    monitor = next(o for o in objects if o["kind"] == "PodMonitor")
    assert monitor["metadata"]["labels"]["release"] == "my-release"
    _ensure_namespace(api_cluster, "mpi-operator")
    out = _server_dry_run(api_cluster, objects)
    assert "podmonitor.monitoring.coreos.com/mpi-operator" in out
