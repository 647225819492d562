"""What the install-manifest tests share: where the overlays live, and kustomize."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from examples_support import ROOT

from devcluster import LocalCluster

OVERLAYS = ROOT / "manifests" / "overlays"
COMPONENTS = ROOT / "manifests" / "components"
T9K_CRD_NAME = "mpijobs.batch.tensorstack.dev"
RBAC_KINDS = {
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
}


def kustomize(cluster: LocalCluster, path: Path) -> list[dict[str, Any]]:
    out = cluster.kubectl("kustomize", str(path)).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def user_kustomization(tmp_path: Path, **kustomization: Any) -> Path:
    """A kustomization of a user's own in ``tmp_path`` (kustomize takes relative paths
    only: absolute ones given here are made relative)."""
    path = tmp_path / "kustomize"
    path.mkdir(exist_ok=True)
    for key in ("resources", "components"):
        if key in kustomization:
            kustomization[key] = [os.path.relpath(p, path) for p in kustomization[key]]
    (path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                **kustomization,
            }
        )
    )
    return path
