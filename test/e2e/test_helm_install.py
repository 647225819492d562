"""The operator installed as docs/install.md tells a user without a container engine:
``make image`` (the debootstrap + umoci image as a named OCI archive), the archive loaded
into the node's containerd with the printed ``ctr -n k8s.io images import`` command (no
``--base-name``: the archive names the image ``mpi-operator-python:<version>``, the
chart's default), then ``helm install`` of charts/mpi-operator with default values apart
from the real node's nodeSelector and toleration. The operator runs the pi example for
real; docs/operations/upgrade.md's Helm commands (upgrade, the CRD applied, history,
rollback) then run as the page shows them, the operator Ready and leading after them;
``helm uninstall`` then removes the operator and keeps the CRD and the MPIJob.

The cluster's CRD (installed when the cluster starts) and any objects a previous install
test left are first adopted into the release with docs/migrate.md's label and
annotations, as a user moving from a kubectl installation does."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from examples_support import ROOT, apply, items, mpijob
from test_in_cluster_operator import (
    NS,
    PI_RESULT,
    _explain,
    _launcher_log,
    _pi_job,
    _ready_operator,
    _wait_succeeded,
)

import mpi_operator
from devcluster import LocalCluster
from devcluster.nodeconfig import REAL_NODE_LABEL, REAL_NODE_TAINT

Obj = dict[str, Any]
RELEASE = "mpi-operator"
#: docs/migrate.md's list of the objects a kubectl installation made.
ADOPTED = (
    "crd/mpijobs.kubeflow.org",
    "clusterrole/mpi-operator",
    "clusterrolebinding/mpi-operator",
    "clusterrole/kubeflow-mpijobs-admin",
    "clusterrole/kubeflow-mpijobs-edit",
    "clusterrole/kubeflow-mpijobs-view",
    "deployment/mpi-operator",
    "serviceaccount/mpi-operator",
)


def documented_upgrade_commands() -> list[list[str]]:
    """The commands of docs/operations/upgrade.md's "With Helm" section, in order."""
    text = (ROOT / "docs/operations/upgrade.md").read_text()
    section = text.split("\n## With Helm\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    return [shlex.split(line) for block in blocks for line in block.splitlines() if line.strip()]


def _in_checkout(args: list[str]) -> list[str]:
    """Paths of the checkout (``charts/...``, ``crd/...``) made absolute."""
    return [str(ROOT / a) if "/" in a and (ROOT / a).exists() else a for a in args]


def _helm() -> Path:
    subprocess.run([ROOT / "hack/build-helm.sh"], check=True, timeout=1800)
    out = subprocess.run(
        [ROOT / "hack/build-helm.sh", "--print"], capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip())


#: The archive `make image` last wrote in this session: the checkout does not change
#: during a run, so a later test (the migration's) loads this one instead of making it again.
_MADE: list[Path] = []


def made_image(archive: Path) -> Path:
    """The archive of `make image` made earlier in this session, else one made at ``archive``."""
    if not _MADE:
        _make_image(archive)
    return _MADE[-1]


def _make_image(archive: Path) -> str:
    """`make image` as a user runs it here (no engine answers), into ``archive``; its output."""
    out = subprocess.run(
        ["make", "-s", "image", f"IMAGE_ARCHIVE={archive}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if out.returncode != 0:
        pytest.fail(f"make image: {out.stderr.strip()}", pytrace=False)
    _MADE.append(archive)
    return out.stdout


def _adopt(cluster: LocalCluster) -> None:
    for obj in ADOPTED:
        args = ("-n", NS, obj)
        cluster.kubectl(
            "label", *args, "app.kubernetes.io/managed-by=Helm", "--overwrite", check=False
        )
        cluster.kubectl(
            "annotate",
            *args,
            f"meta.helm.sh/release-name={RELEASE}",
            f"meta.helm.sh/release-namespace={NS}",
            "--overwrite",
            check=False,
        )


def _run_helm(cluster: LocalCluster, helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [helm, f"--kubeconfig={cluster.kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, f"helm {' '.join(args)}: {out.stdout}{out.stderr}"
    return out


@pytest.fixture
def helm_operator(real_cluster: LocalCluster, tmp_path: Path) -> Iterator[Obj]:
    """The chart installed on the real node and its pod once Ready and leading; the
    release uninstalled afterwards (when the test has not) and the namespace deleted."""
    helm = _helm()
    archive = tmp_path / "mpi-operator.oci.tar"
    printed = _make_image(archive)
    ctr_line = f"ctr -n k8s.io images import {archive}"
    assert ctr_line in printed, printed
    assert real_cluster.node is not None
    real_cluster.node.import_image(archive)  # the printed ctr command, on the node
    key, value = REAL_NODE_LABEL
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "nodeSelector": {key: value},
                "tolerations": [{"operator": "Equal", **REAL_NODE_TAINT}],
            }
        )
    )
    _adopt(real_cluster)
    try:
        _run_helm(
            real_cluster,
            helm,
            "install",
            RELEASE,
            str(ROOT / "charts/mpi-operator"),
            "--namespace",
            NS,
            "--create-namespace",
            "--values",
            str(values),
        )
        yield _ready_operator(real_cluster)
    finally:
        print(_explain(real_cluster, NS))
        subprocess.run(
            [helm, f"--kubeconfig={real_cluster.kubeconfig}", "uninstall", RELEASE, "-n", NS],
            capture_output=True,
            timeout=300,
            check=False,
        )
        real_cluster.kubectl(
            "wait",
            "--for=delete",
            "pod",
            "-n",
            NS,
            "-l",
            "app=mpi-operator",
            "--timeout=90s",
            check=False,
        )
        real_cluster.kubectl("delete", "namespace", NS, "--timeout=90s", check=False)


@pytest.fixture
def job_ns(real_cluster: LocalCluster) -> Iterator[str]:
    name = real_cluster.create_namespace("helm")
    yield name
    real_cluster.delete_namespace(name)


def test_helm_install_from_the_archive_runs_pi_and_uninstall_keeps_the_jobs(
    real_cluster: LocalCluster, helm_operator: Obj, job_ns: str
) -> None:
    pod = helm_operator
    (container,) = pod["spec"]["containers"]
    # The chart's default image, found on the node under the archive's own name.
    assert container["image"] == f"mpi-operator-python:{mpi_operator.__version__}"
    assert container["args"][0] == "--lock-namespace=$(POD_NAMESPACE)"
    version = real_cluster.kubectl(
        "exec", "-n", NS, pod["metadata"]["name"], "--", "mpi-operator", "--version"
    ).stdout
    assert f"Version: v{mpi_operator.__version__}" in version
    assert "Git SHA: Not provided." not in version, version

    apply(real_cluster, job_ns, _pi_job("pi"))
    _wait_succeeded(real_cluster, job_ns, "pi")
    log = _launcher_log(real_cluster, job_ns, "pi")
    assert PI_RESULT.search(log), log

    # Upgraded and rolled back as docs/operations/upgrade.md says.
    helm = _helm()
    commands = documented_upgrade_commands()
    assert [c[:2] for c in commands] == [
        ["helm", "upgrade"],
        ["kubectl", "apply"],
        ["helm", "history"],
        ["helm", "rollback"],
    ]
    for command in commands:
        if command[0] == "helm":
            _run_helm(real_cluster, helm, *_in_checkout(command[1:]))
        else:
            real_cluster.kubectl(*_in_checkout(command[1:]))
    history = _run_helm(real_cluster, helm, "history", RELEASE, "-n", NS, "-o", "json").stdout
    assert [(r["revision"], r["status"]) for r in json.loads(history)] == [
        (1, "superseded"),
        (2, "superseded"),
        (3, "deployed"),
    ], history
    assert json.loads(history)[-1]["description"] == "Rollback to 1", history
    _ready_operator(real_cluster)
    assert mpijob(real_cluster, job_ns, "pi")["metadata"]["name"] == "pi"

    # Uninstalled: the operator goes, the CRD and the
    # MPIJob stay.
    out = subprocess.run(
        [_helm(), f"--kubeconfig={real_cluster.kubeconfig}", "uninstall", RELEASE, "-n", NS],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "These resources were kept due to the resource policy" in out.stdout, out.stdout
    assert "[CustomResourceDefinition] mpijobs.kubeflow.org" in out.stdout, out.stdout
    gone = real_cluster.kubectl("get", "deployment", "-n", NS, "mpi-operator", check=False)
    assert gone.returncode != 0
    crd = real_cluster.kubectl("get", "crd", "mpijobs.kubeflow.org", "-o", "name").stdout
    assert crd.strip() == "customresourcedefinition.apiextensions.k8s.io/mpijobs.kubeflow.org"
    assert mpijob(real_cluster, job_ns, "pi")["metadata"]["name"] == "pi"
    assert items(real_cluster, f"/api/v1/namespaces/{job_ns}/pods")
