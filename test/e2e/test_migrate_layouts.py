"""docs/migrate.md's commands, run on the api-only local cluster against the Go operator's
own manifests (kubeflow/mpi-operator v0.8.2, from its Go module):

* its kubeflow overlay (namespace and Lease in ``kubeflow``) replaced by our kubeflow
  overlay: the same Deployment updated in place, no second one in ``mpi-operator``;
* its standalone file adopted into a Helm release with the doc's labels and annotations
  and replaced by ``helm install``: the Deployment updated in place;
* the rollback: ``helm uninstall`` keeps the CRD, and the Go operator's file applies
  again over what is left.

No pod runs here (api-only shape): what happens to running jobs is the in-place update
of the Deployment, checked by its uid."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from examples_support import ROOT

from devcluster import LocalCluster

REFERENCE_MODULE = "github.com/kubeflow/mpi-operator@v0.8.2"
MIGRATE_DOC = ROOT / "docs/migrate.md"
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def reference_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = subprocess.run(
        ["go", "mod", "download", "-json", REFERENCE_MODULE],
        cwd=tmp_path_factory.mktemp("gomod"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, f"go mod download {REFERENCE_MODULE}: {out.stdout}{out.stderr}"
    return Path(json.loads(out.stdout)["Dir"])


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "cluster", "api", crd_files=[])
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def helm() -> Path:
    subprocess.run([ROOT / "hack/build-helm.sh"], check=True, timeout=1800)
    out = subprocess.run(
        [ROOT / "hack/build-helm.sh", "--print"], capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip())


def _deployments(cluster: LocalCluster) -> list[Obj]:
    out = cluster.kubectl(
        "get",
        "deployments",
        "--all-namespaces",
        "-l",
        "app.kubernetes.io/name=mpi-operator",
        "-o",
        "json",
    ).stdout
    items: list[Obj] = json.loads(out)["items"]
    return items


def _apply_kustomization(cluster: LocalCluster, path: Path) -> None:
    built = cluster.kubectl("kustomize", str(path)).stdout
    cluster.kubectl("apply", "--server-side", "-f", "-", input=built)


def _doc_adopted_objects() -> list[str]:
    """The objects docs/migrate.md's Helm section labels and annotates."""
    text = MIGRATE_DOC.read_text()
    loop = re.search(r"for obj in (.*?); do", text, re.S)
    assert loop, "docs/migrate.md has no adoption loop"
    return loop.group(1).replace("\\", " ").split()


def _helm(cluster: LocalCluster, helm: Path, *args: str) -> str:
    out = subprocess.run(
        [helm, f"--kubeconfig={cluster.kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, f"helm {' '.join(args)}: {out.stdout}{out.stderr}"
    return out.stdout


def test_kubeflow_layout_is_replaced_in_place(cluster: LocalCluster, reference_dir: Path) -> None:
    cluster.kubectl("create", "namespace", "kubeflow")
    _apply_kustomization(cluster, reference_dir / "manifests/overlays/kubeflow")
    (theirs,) = _deployments(cluster)
    assert theirs["metadata"]["namespace"] == "kubeflow"
    assert (
        "--lock-namespace=kubeflow" in theirs["spec"]["template"]["spec"]["containers"][0]["args"]
    )

    cluster.kubectl("apply", "--server-side", "-k", str(ROOT / "manifests/overlays/kubeflow"))
    (ours,) = _deployments(cluster)  # one Deployment: no second leader in mpi-operator
    assert ours["metadata"]["uid"] == theirs["metadata"]["uid"]
    (container,) = ours["spec"]["template"]["spec"]["containers"]
    assert container["image"].startswith("mpi-operator-python:")
    # The Lease stays in kubeflow: --lock-namespace is the pod's namespace, kubeflow.
    assert container["args"][0] == "--lock-namespace=$(POD_NAMESPACE)"
    role = json.loads(
        cluster.kubectl(
            "get", "role", "-n", "kubeflow", "mpi-operator-leader-election", "-o", "json"
        ).stdout
    )
    assert role["rules"][1]["resourceNames"] == ["mpi-operator"]


def test_standalone_layout_moves_to_helm_and_back(
    cluster: LocalCluster, reference_dir: Path, helm: Path
) -> None:
    reference = reference_dir / "deploy/v2beta1/mpi-operator.yaml"
    cluster.kubectl("apply", "--server-side", "-f", str(reference))
    (theirs,) = _deployments(cluster)

    # Without the doc's adoption, Helm refuses the Go operator's objects.
    refused = subprocess.run(
        [
            helm,
            f"--kubeconfig={cluster.kubeconfig}",
            "install",
            "mpi-operator",
            str(ROOT / "charts/mpi-operator"),
            "-n",
            "mpi-operator",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert refused.returncode != 0
    assert "invalid ownership metadata" in refused.stderr, refused.stderr

    objects = _doc_adopted_objects()
    assert "deployment/mpi-operator" in objects and "crd/mpijobs.kubeflow.org" in objects
    for obj in objects:
        cluster.kubectl(
            "-n", "mpi-operator", "label", obj, "app.kubernetes.io/managed-by=Helm", "--overwrite"
        )
        cluster.kubectl(
            "-n",
            "mpi-operator",
            "annotate",
            obj,
            "meta.helm.sh/release-name=mpi-operator",
            "meta.helm.sh/release-namespace=mpi-operator",
            "--overwrite",
        )
    _helm(
        cluster,
        helm,
        "install",
        "mpi-operator",
        str(ROOT / "charts/mpi-operator"),
        "-n",
        "mpi-operator",
    )
    (ours,) = _deployments(cluster)
    assert ours["metadata"]["uid"] == theirs["metadata"]["uid"]
    assert ours["spec"]["template"]["spec"]["containers"][0]["image"].startswith(
        "mpi-operator-python:"
    )

    # Rollback: uninstall keeps the CRD; the Go operator's file applies over what is left.
    out = _helm(cluster, helm, "uninstall", "mpi-operator", "-n", "mpi-operator")
    assert "[CustomResourceDefinition] mpijobs.kubeflow.org" in out, out
    assert not _deployments(cluster)
    cluster.kubectl("get", "crd", "mpijobs.kubeflow.org")
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(reference))
    (back,) = _deployments(cluster)
    assert back["spec"]["template"]["spec"]["containers"][0]["image"].startswith(
        "mpioperator/mpi-operator"
    )
