"""Upgrading an installation of the Go operator: its own install file
(deploy/v2beta1/mpi-operator.yaml of kubeflow/mpi-operator v0.8.2, read from its Go
module, which ``go mod download`` fetches into the module cache when missing), then
ours over it, both server-side."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from examples_support import DEPLOY, docs

from devcluster import LocalCluster

REFERENCE_MODULE = (
    "github.com/kubeflow/mpi-operator@v0.8.2"  # as hack/install-reference-operator.sh
)


@pytest.fixture(scope="module")
def reference_deploy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go operator's single install file, from its module in the Go module cache."""
    # Outside any main module, so that go.mod files of this repository play no part.
    out = subprocess.run(
        ["go", "mod", "download", "-json", REFERENCE_MODULE],
        cwd=tmp_path_factory.mktemp("gomod"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, f"go mod download {REFERENCE_MODULE}: {out.stdout}{out.stderr}"
    path = Path(json.loads(out.stdout)["Dir"]) / "deploy" / "v2beta1" / "mpi-operator.yaml"
    assert path.is_file(), path
    return path


def test_upgrade_over_the_go_operators_installation(reference_deploy: Path, tmp_path: Path) -> None:
    """Applying our file over the Go operator's (both server-side, as that project
    documents) updates every object in place: the Deployment's selector is the same,
    the ClusterRole loses pods/exec, endpoints and CRD rights."""
    cluster = LocalCluster(tmp_path / "cluster", "api", crd_files=[])
    cluster.start()
    try:
        cluster.kubectl("apply", "--server-side", "-f", str(reference_deploy))
        cluster.kubectl("apply", "--server-side", "-f", str(DEPLOY))
        role = json.loads(
            cluster.kubectl("get", "clusterrole", "mpi-operator", "-o", "json").stdout
        )
        ours = next(
            d
            for d in docs(DEPLOY)
            if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "mpi-operator"
        )
        assert role["rules"] == ours["rules"]
        deployment = json.loads(
            cluster.kubectl(
                "get", "deployment", "mpi-operator", "-n", "mpi-operator", "-o", "json"
            ).stdout
        )
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        wanted = next(d for d in docs(DEPLOY) if d["kind"] == "Deployment")
        (wanted_container,) = wanted["spec"]["template"]["spec"]["containers"]
        assert container["image"] == wanted_container["image"]
        assert container["args"] == wanted_container["args"]
        assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
        crd = json.loads(cluster.kubectl("get", "crd", "mpijobs.kubeflow.org", "-o", "json").stdout)
        assert [v["name"] for v in crd["spec"]["versions"] if v.get("served")] == ["v2beta1"]
    finally:
        cluster.stop()
