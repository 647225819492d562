"""The Helm chart (charts/mpi-operator), rendered by the real Helm CLI (hack/build-helm.sh
builds it from the Go module proxy into the cache; `make test` builds it first, and the
fixture builds it when it is missing).

With default values the chart renders deploy/v2beta1/mpi-operator.yaml, object for object,
once normalised: YAML parsed (order of keys and documents, comments and quoting aside),
the CRDs' ``helm.sh/resource-policy: keep`` set aside, and the Namespace object, which
``helm install --create-namespace`` creates (``createNamespace: true`` renders it too).
Every values file under charts/mpi-operator/ci/ (the combinations docs/install.md lists)
passes ``helm lint --strict`` and renders what its kustomize counterpart, or its flags, say.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import mpi_operator
from mpi_operator.server.options import parse_args

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts/mpi-operator"
DEPLOY = ROOT / "deploy/v2beta1/mpi-operator.yaml"
KUBE_VERSION = "1.36.4"
KEEP = "helm.sh/resource-policy"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def helm() -> Path:
    path = Path(
        subprocess.run(
            [ROOT / "hack/build-helm.sh", "--print"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    if not path.is_file():  # cold: about 4 min (make test builds it beforehand)
        subprocess.run([ROOT / "hack/build-helm.sh"], check=True, timeout=1800)
    return path


def _template(
    helm: Path,
    *args: str,
    namespace: str = "mpi-operator",
    release: str = "mpi-operator",
    chart: Path = CHART,
) -> list[Obj]:
    out = subprocess.run(
        [
            helm,
            "template",
            release,
            chart,
            "--namespace",
            namespace,
            "--kube-version",
            KUBE_VERSION,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def _values(name: str) -> tuple[str, ...]:
    return ("--values", str(CHART / "ci" / name))


def _key(obj: Obj) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def _normalised(objs: list[Obj]) -> dict[tuple[str, str, str], Obj]:
    """By kind, namespace and name, with the keep policy set aside."""
    out = {}
    for obj in objs:
        obj = json.loads(json.dumps(obj))
        annotations = obj["metadata"].get("annotations", {})
        annotations.pop(KEEP, None)
        if not annotations:
            obj["metadata"].pop("annotations", None)
        key = _key(obj)
        assert key not in out, f"{key} rendered twice"
        out[key] = obj
    return out


def _deploy() -> list[Obj]:
    return [d for d in yaml.safe_load_all(DEPLOY.read_text()) if d]


def _one(objs: list[Obj], kind: str, name: str, namespace: str = "") -> Obj:
    found = [o for o in objs if _key(o) == (kind, namespace, name)]
    assert len(found) == 1, f"{kind} {namespace}/{name}: {len(found)} found"
    return found[0]


def _args(objs: list[Obj], namespace: str = "mpi-operator") -> list[str]:
    deployment = _one(objs, "Deployment", "mpi-operator", namespace)
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def _yaml_docs(path: Path) -> Iterator[Obj]:
    yield from (d for d in yaml.safe_load_all(path.read_text()) if d)


def test_chart_version_is_the_packages() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == mpi_operator.__version__
    assert chart["kubeVersion"] == ">=1.28.0-0"


def test_default_values_render_the_deploy_manifest(helm: Path) -> None:
    rendered = _normalised(_template(helm))
    expected = _normalised([d for d in _deploy() if d["kind"] != "Namespace"])
    assert rendered.keys() == expected.keys()
    for key, obj in expected.items():
        assert rendered[key] == obj, key


def test_create_namespace_renders_all_of_the_deploy_manifest(helm: Path) -> None:
    rendered = _normalised(_template(helm, "--set", "createNamespace=true"))
    assert rendered == _normalised(_deploy())


def test_crds_are_kept_on_uninstall_unless_asked(helm: Path) -> None:
    for crd in (o for o in _template(helm) if o["kind"] == "CustomResourceDefinition"):
        assert crd["metadata"]["annotations"][KEEP] == "keep"
    objs = _template(helm, "--set", "crds.keep=false", "--set", "t9k.enabled=true")
    crds = [o for o in objs if o["kind"] == "CustomResourceDefinition"]
    assert len(crds) == 2
    assert all(KEEP not in c["metadata"].get("annotations", {}) for c in crds)


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.name)
def test_documented_values_lint_and_render(helm: Path, values: Path) -> None:
    lint = subprocess.run(
        [helm, "lint", "--strict", CHART, "--kube-version", KUBE_VERSION, "--values", values],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in lint.stdout
    objs = _template(helm, "--values", str(values))
    # The operator accepts every flag the chart gives it.
    args = [a.replace("$(POD_NAMESPACE)", "mpi-operator") for a in _args(objs)]
    opts = parse_args(args, {})
    assert opts.lock_namespace == "mpi-operator" or values.name == "kubeflow-values.yaml"
    assert f"values/{values.name}" in (ROOT / "docs/install.md").read_text().replace(
        "charts/mpi-operator/ci/", "values/"
    ), f"docs/install.md does not document {values.name}"


def test_t9k_values_are_the_t9k_overlay(helm: Path) -> None:
    objs = _template(helm, *_values("t9k-values.yaml"))
    t9k_crd = next(_yaml_docs(ROOT / "crd/t9k/batch.tensorstack.dev_mpijobs.yaml"))
    assert _normalised(objs)[_key(t9k_crd)] == t9k_crd
    rules = _one(objs, "ClusterRole", "mpi-operator")["rules"]
    default_rules = _one(_deploy(), "ClusterRole", "mpi-operator")["rules"]
    patch = yaml.safe_load((ROOT / "manifests/components/t9k/rbac-rules.yaml").read_text())
    assert rules == default_rules + [op["value"] for op in patch]


def test_namespaced_values_are_the_namespaced_overlay(helm: Path) -> None:
    objs = _template(helm, *_values("namespaced-values.yaml"))
    role_file = list(_yaml_docs(ROOT / "manifests/rbac/namespaced/role.yaml"))
    role = _one(objs, "Role", "mpi-operator", "mpi-operator")
    assert role["rules"] == role_file[0]["rules"]
    assert _one(objs, "RoleBinding", "mpi-operator", "mpi-operator") == role_file[1]
    assert not [o for o in objs if o["kind"] == "ClusterRoleBinding"]
    assert [o["metadata"]["name"] for o in objs if o["kind"] == "ClusterRole"] == [
        "kubeflow-mpijobs-admin",
        "kubeflow-mpijobs-edit",
        "kubeflow-mpijobs-view",
    ]
    assert _args(objs)[-1] == "--namespace=$(POD_NAMESPACE)"


def test_namespace_list_has_a_role_in_each(helm: Path) -> None:
    objs = _template(helm, *_values("namespace-list-values.yaml"))
    for namespace in ("team-a", "team-b"):
        assert _one(objs, "Role", "mpi-operator", namespace)
        binding = _one(objs, "RoleBinding", "mpi-operator", namespace)
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "mpi-operator", "namespace": "mpi-operator"}
        ]
    assert not [
        o
        for o in objs
        if o["kind"] == "Role"
        and o["metadata"]["name"] == "mpi-operator"
        and o["metadata"]["namespace"] == "mpi-operator"
    ]
    args = _args(objs)
    assert "--namespace=team-a,team-b" in args and "--gang-scheduling=volcano" in args
    # Gang scheduling reads PriorityClasses, which only a ClusterRole grants.
    pc = _one(objs, "ClusterRole", "mpi-operator-priorityclasses")
    assert pc["rules"] == [
        {
            "apiGroups": ["scheduling.k8s.io"],
            "resources": ["priorityclasses"],
            "verbs": ["list", "watch"],
        }
    ]
    assert (
        _one(objs, "ClusterRoleBinding", "mpi-operator-priorityclasses")["subjects"][0]["namespace"]
        == "mpi-operator"
    )


def test_monitoring_values_are_the_monitoring_component(helm: Path) -> None:
    objs = _template(helm, *_values("monitoring-values.yaml"))
    component = ROOT / "manifests/components/monitoring"
    service = next(_yaml_docs(component / "service.yaml"))
    assert _one(objs, "Service", "mpi-operator-metrics", "mpi-operator") == service
    pod_monitor = next(_yaml_docs(component / "pod-monitor.yaml"))
    pod_monitor["metadata"]["labels"]["release"] = "prometheus"
    assert _one(objs, "PodMonitor", "mpi-operator", "mpi-operator") == pod_monitor
    dashboard = _one(objs, "ConfigMap", "mpi-operator-dashboard", "mpi-operator")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["mpi-operator.json"]) == json.loads(
        (ROOT / "deploy/monitoring/grafana-dashboard.json").read_text()
    )


def test_tuning_values_reach_the_deployment(helm: Path) -> None:
    objs = _template(helm, *_values("tuning-values.yaml"))
    deployment = _one(objs, "Deployment", "mpi-operator", "mpi-operator")
    assert deployment["spec"]["replicas"] == 2
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example.org/team/mpi-operator-python:0.1.0-rc1"
    assert container["imagePullPolicy"] == "Always"
    assert container["resources"]["limits"] == {"cpu": "2", "memory": "1Gi"}
    assert container["args"] == [
        "--lock-namespace=$(POD_NAMESPACE)",
        "--monitoring-port=8081",
        "--healthz-port=8080",
        "--log-format=json",
        "--gang-scheduling=scheduler-plugins-scheduler",
        "--kube-api-qps=300",
        "--kube-api-burst=600",
        "--lease-duration=30",
        "--renew-deadline=20",
        "--retry-period=5",
    ]


def test_kubeflow_values_keep_the_go_operators_lease(helm: Path) -> None:
    """The Go operator's kubeflow overlay runs in namespace kubeflow with
    --lock-namespace=kubeflow: the same Deployment, ServiceAccount and Lease names there."""
    objs = _template(helm, *_values("kubeflow-values.yaml"), namespace="kubeflow")
    assert "--lock-namespace=kubeflow" in _args(objs, "kubeflow")
    assert _one(objs, "Role", "mpi-operator-leader-election", "kubeflow")
    binding = _one(objs, "ClusterRoleBinding", "mpi-operator")
    assert binding["subjects"][0]["namespace"] == "kubeflow"


def test_no_crds_values_render_no_crd(helm: Path) -> None:
    objs = _template(helm, *_values("no-crds-values.yaml"))
    assert not [o for o in objs if o["kind"] == "CustomResourceDefinition"]
    assert not [o for o in objs if o["metadata"]["name"].startswith("kubeflow-mpijobs-")]


def test_an_unknown_rbac_scope_is_refused(helm: Path) -> None:
    out = subprocess.run(
        [helm, "template", CHART, "--kube-version", KUBE_VERSION, "--set", "rbac.scope=global"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode != 0
    assert 'rbac.scope must be cluster or namespaced, not "global"' in out.stderr


def test_kubernetes_older_than_the_crd_needs_is_refused(helm: Path) -> None:
    out = subprocess.run(
        [helm, "template", CHART, "--kube-version", "1.27.0"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode != 0
    assert "kubeVersion" in out.stderr or "incompatible" in out.stderr


def _archive_commands() -> list[list[str]]:
    """The commands of docs/install.md's "The chart as an archive" section, in order."""
    text = (ROOT / "docs/install.md").read_text()
    section = text.split("\n### The chart as an archive, in an OCI registry\n", 1)[1]
    blocks = re.findall(r"```sh\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    return [shlex.split(line) for line in lines if line.strip()]


def _helm_in(helm: Path, cwd: Path, *args: str | Path) -> str:
    out = subprocess.run(
        [helm, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_the_documented_archive_lints_packages_and_renders_as_the_directory(
    helm: Path, tmp_path: Path
) -> None:
    """``helm lint --strict`` and ``helm package`` as the install page gives them, run in
    a directory holding a copy of the chart (the page's relative paths). The archive holds
    the chart, schema included: it renders what the directory renders, and refuses a typo
    as the directory does. ``helm push`` and the install from ``oci://`` need a registry,
    which the tests do not run: only their form is checked."""
    version = mpi_operator.__version__
    lint, package, push, install = _archive_commands()
    assert lint == ["helm", "lint", "--strict", "charts/mpi-operator"]
    assert package == ["helm", "package", "charts/mpi-operator", "--destination", "dist"]
    assert push == ["helm", "push", f"dist/mpi-operator-{version}.tgz", "oci://<registry>/charts"]
    assert install[:6] == [
        "helm",
        "install",
        "mpi-operator",
        "oci://<registry>/charts/mpi-operator",
        "--version",
        version,
    ], install
    shutil.copytree(CHART, tmp_path / "charts/mpi-operator")
    linted = _helm_in(helm, tmp_path, *lint[1:])
    assert "1 chart(s) linted, 0 chart(s) failed" in linted, linted
    packaged = _helm_in(helm, tmp_path, *package[1:])
    archive = tmp_path / push[2]
    assert packaged.strip() == f"Successfully packaged chart and saved it to: {push[2]}"
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    assert {
        "mpi-operator/Chart.yaml",
        "mpi-operator/values.yaml",
        "mpi-operator/values.schema.json",
        "mpi-operator/templates/deployment.yaml",
    } <= names, sorted(names)
    assert _normalised(_template(helm, chart=archive)) == _normalised(_template(helm))
    refused = subprocess.run(
        [helm, "template", archive, "--kube-version", KUBE_VERSION, "--set", "rbac.scop=x"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode != 0
    assert "at '/rbac': additional properties 'scop' not allowed" in refused.stderr
