"""The chart's values for platform teams (service account, RBAC, pod settings, security
contexts, names) and its values.schema.json, rendered by the real Helm CLI as in
test_helm_chart.py: each value changes what it should and nothing else, and a key the
schema does not know fails `helm template` with its name."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_helm_chart import CHART, KUBE_VERSION, ROOT, _deploy, _normalised, _one, _template

Obj = dict[str, Any]
NS = "mpi-operator"
SCHEMA = json.loads((CHART / "values.schema.json").read_text())
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
RBAC_KINDS = {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}
SELECTOR = {
    "app": "mpi-operator",
    "app.kubernetes.io/component": "mpijob",
    "app.kubernetes.io/name": "mpi-operator",
    "kustomize.component": "mpi-operator",
}


@pytest.fixture(scope="module")
def helm() -> Path:
    script = ROOT / "hack/build-helm.sh"
    out = subprocess.run([script, "--print"], capture_output=True, text=True, check=True)
    path = Path(out.stdout.strip())
    if not path.is_file():  # cold: about 4 min (make test builds it beforehand)
        subprocess.run([script], check=True, timeout=1800)
    return path


@pytest.fixture(scope="module")
def default(helm: Path) -> dict[tuple[str, str, str], Obj]:
    """The default render, normalised (each test copies what it changes)."""
    return _normalised(_template(helm))


def _render(helm: Path, tmp_path: Path, values: Obj, release: str = "mpi-operator") -> list[Obj]:
    """The chart rendered with ``values`` (a values file, so that null means null)."""
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    return _template(helm, "--values", str(path), release=release)


def _refused(helm: Path, *args: str) -> str:
    out = subprocess.run(
        [helm, "template", "mpi-operator", CHART, "--kube-version", KUBE_VERSION, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode != 0, out.stdout[:2000]
    return out.stderr


def _deployment(objs: list[Obj], name: str = "mpi-operator") -> Obj:
    return _one(objs, "Deployment", name, NS)


def _pod(objs: list[Obj]) -> Obj:
    pod: Obj = _deployment(objs)["spec"]["template"]
    return pod


def _container(objs: list[Obj]) -> Obj:
    (container,) = _pod(objs)["spec"]["containers"]
    return container


def _default_pod() -> Obj:
    pod: Obj = _one(_deploy(), "Deployment", "mpi-operator", NS)["spec"]["template"]
    return pod


# (values, what the render must then show) for the pod's values.
POD_CASES: dict[str, tuple[Obj, Callable[[list[Obj]], None]]] = {}


def _case(name: str, values: Obj) -> Callable[[Callable[[list[Obj]], None]], None]:
    def register(check: Callable[[list[Obj]], None]) -> None:
        POD_CASES[name] = (values, check)

    return register


@_case("podAnnotations", {"podAnnotations": {"example.org/team": "hpc"}})
def _(objs: list[Obj]) -> None:
    assert _pod(objs)["metadata"]["annotations"] == {
        "sidecar.istio.io/inject": "false",
        "example.org/team": "hpc",
    }


@_case("podAnnotations over the chart's", {"podAnnotations": {"sidecar.istio.io/inject": "true"}})
def _(objs: list[Obj]) -> None:
    assert _pod(objs)["metadata"]["annotations"] == {"sidecar.istio.io/inject": "true"}


@_case("podLabels", {"podLabels": {"team": "hpc"}})
def _(objs: list[Obj]) -> None:
    assert _pod(objs)["metadata"]["labels"] == {**SELECTOR, "team": "hpc"}
    assert _deployment(objs)["spec"]["selector"]["matchLabels"] == SELECTOR
    assert _deployment(objs)["metadata"]["labels"] == SELECTOR


@_case("priorityClassName", {"priorityClassName": "system-cluster-critical"})
def _(objs: list[Obj]) -> None:
    assert _pod(objs)["spec"]["priorityClassName"] == "system-cluster-critical"


@_case("podSecurityContext.runAsUser null", {"podSecurityContext": {"runAsUser": None}})
def _(objs: list[Obj]) -> None:
    assert _pod(objs)["spec"]["securityContext"] == {
        "runAsNonRoot": True,
        "runAsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


@_case(
    "podSecurityContext for OpenShift",
    {"podSecurityContext": {"runAsUser": None, "runAsGroup": None}},
)
def _(objs: list[Obj]) -> None:
    assert _pod(objs)["spec"]["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


@_case("podSecurityContext null", {"podSecurityContext": None})
def _(objs: list[Obj]) -> None:
    assert "securityContext" not in _pod(objs)["spec"]


@_case("podSecurityContext.fsGroup", {"podSecurityContext": {"fsGroup": 2000}})
def _(objs: list[Obj]) -> None:
    expected = {**_default_pod()["spec"]["securityContext"], "fsGroup": 2000}
    assert _pod(objs)["spec"]["securityContext"] == expected


@_case("securityContext", {"securityContext": {"readOnlyRootFilesystem": False}})
def _(objs: list[Obj]) -> None:
    expected = {**_default_pod()["spec"]["containers"][0]["securityContext"]}
    expected["readOnlyRootFilesystem"] = False
    assert _container(objs)["securityContext"] == expected


@_case("securityContext null", {"securityContext": None})
def _(objs: list[Obj]) -> None:
    assert "securityContext" not in _container(objs)


@pytest.mark.parametrize("name", sorted(POD_CASES))
def test_a_pod_value_changes_the_pod_and_nothing_else(
    helm: Path, default: dict[tuple[str, str, str], Obj], tmp_path: Path, name: str
) -> None:
    values, check = POD_CASES[name]
    objs = _render(helm, tmp_path, values)
    check(objs)
    # Everything but the pod template is as with default values.
    rendered = _normalised(objs)
    assert rendered.keys() == default.keys()
    key = ("Deployment", NS, "mpi-operator")
    for k in default:
        if k != key:
            assert rendered[k] == default[k], k
    deployment, expected = (json.loads(json.dumps(o)) for o in (rendered[key], default[key]))
    del deployment["spec"]["template"], expected["spec"]["template"]
    assert deployment == expected


def test_the_readiness_and_liveness_probes_use_the_operators_health_endpoint(
    helm: Path,
) -> None:
    container = _container(_template(helm))
    port = next(p for p in container["ports"] if p["name"] == "healthz")
    assert f"--healthz-port={port['containerPort']}" in container["args"]
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "healthz"}
    # mpi_operator/server/http.py serves /healthz (and /healthz/<check>), nothing else.
    http = (ROOT / "mpi_operator/server/http.py").read_text()
    assert 'add_get("/healthz", healthz)' in http


def test_defaults_given_explicitly_render_the_defaults(
    helm: Path, default: dict[tuple[str, str, str], Obj], tmp_path: Path
) -> None:
    explicit = {
        key: VALUES[key]
        for key in (
            "nameOverride",
            "fullnameOverride",
            "podAnnotations",
            "podLabels",
            "priorityClassName",
            "podSecurityContext",
            "securityContext",
            "serviceAccount",
        )
    }
    explicit["rbac"] = {"create": True}
    assert _normalised(_render(helm, tmp_path, explicit)) == default


def test_the_release_name_does_not_rename_the_objects(
    helm: Path, default: dict[tuple[str, str, str], Obj], tmp_path: Path
) -> None:
    objs = _render(helm, tmp_path, {}, release="hpc-operator")
    assert _normalised(objs) == default


def test_rbac_create_false_renders_no_rbac(helm: Path, tmp_path: Path) -> None:
    for values in (
        {"rbac": {"create": False}},
        {"rbac": {"create": False, "scope": "namespaced"}, "gangScheduling": "volcano"},
        {
            "rbac": {"create": False, "scope": "namespaced", "watchNamespaces": ["a", "b"]},
            "t9k": {"enabled": True},
        },
    ):
        objs = _render(helm, tmp_path, values)
        assert [o for o in objs if o["kind"] in RBAC_KINDS] == [], values
        # The rest is there: the operator, its ServiceAccount and the CRDs.
        assert _deployment(objs)["spec"]["template"]["spec"]["serviceAccountName"] == NS
        assert _one(objs, "ServiceAccount", "mpi-operator", NS)
        assert [o for o in objs if o["kind"] == "CustomResourceDefinition"]
    # The namespaced scope still tells the operator where to look.
    objs = _render(helm, tmp_path, {"rbac": {"create": False, "scope": "namespaced"}})
    assert "--namespace=$(POD_NAMESPACE)" in _container(objs)["args"]


def _subjects(objs: list[Obj]) -> list[Obj]:
    return [s for o in objs if o["kind"].endswith("Binding") for s in o["subjects"]]


def test_service_account_create_false_uses_the_named_one(helm: Path, tmp_path: Path) -> None:
    values = {
        "serviceAccount": {"create": False, "name": "platform-sa"},
        "imagePullSecrets": [{"name": "registry"}],
        "gangScheduling": "volcano",
        "rbac": {"scope": "namespaced"},
    }
    objs = _render(helm, tmp_path, values)
    assert [o for o in objs if o["kind"] == "ServiceAccount"] == []
    spec = _pod(objs)["spec"]
    assert spec["serviceAccountName"] == "platform-sa"
    # No ServiceAccount of the chart's carries the pull secrets: the pod does.
    assert spec["imagePullSecrets"] == [{"name": "registry"}]
    subjects = _subjects(objs)
    assert len(subjects) == 3  # the Role's, the leader election's, the PriorityClasses'
    assert all(
        s == {"kind": "ServiceAccount", "name": "platform-sa", "namespace": NS} for s in subjects
    )


def test_service_account_values(helm: Path, tmp_path: Path) -> None:
    annotations = {"iam.gke.io/gcp-service-account": "op@project.iam.gserviceaccount.com"}
    values = {"serviceAccount": {"name": "op", "annotations": annotations}}
    objs = _render(helm, tmp_path, values)
    account = _one(objs, "ServiceAccount", "op", NS)
    assert account["metadata"]["annotations"] == annotations
    assert _pod(objs)["spec"]["serviceAccountName"] == "op"
    assert "imagePullSecrets" not in _pod(objs)["spec"]
    assert {s["name"] for s in _subjects(objs)} == {"op"}
    # Without a name, create=false means a ServiceAccount called as the objects are.
    objs = _render(helm, tmp_path, {"serviceAccount": {"create": False}})
    assert _pod(objs)["spec"]["serviceAccountName"] == "mpi-operator"


@pytest.mark.parametrize(
    ("values", "name"),
    [
        ({"fullnameOverride": "hpc-operator"}, "hpc-operator"),
        ({"nameOverride": "mpi"}, "mpi"),
        ({"nameOverride": "mpi", "fullnameOverride": "hpc-operator"}, "hpc-operator"),
    ],
)
def test_name_overrides_rename_the_objects_not_their_labels(
    helm: Path, tmp_path: Path, values: Obj, name: str
) -> None:
    values = {**values, "gangScheduling": "volcano", "rbac": {"scope": "namespaced"}}
    values["monitoring"] = {k: {"enabled": True} for k in ("service", "podMonitor", "dashboard")}
    objs = _render(helm, tmp_path, values)
    renamed = {
        ("Deployment", name),
        ("ServiceAccount", name),
        ("Role", name),
        ("RoleBinding", name),
        ("Role", f"{name}-leader-election"),
        ("RoleBinding", f"{name}-leader-election"),
        ("ClusterRole", f"{name}-priorityclasses"),
        ("ClusterRoleBinding", f"{name}-priorityclasses"),
        ("Service", f"{name}-metrics"),
        ("PodMonitor", name),
        ("ConfigMap", f"{name}-dashboard"),
    }
    fixed = {
        ("CustomResourceDefinition", "mpijobs.kubeflow.org"),
        ("ClusterRole", "kubeflow-mpijobs-admin"),
        ("ClusterRole", "kubeflow-mpijobs-edit"),
        ("ClusterRole", "kubeflow-mpijobs-view"),
    }
    assert {(o["kind"], o["metadata"]["name"]) for o in objs} == renamed | fixed
    for obj in objs:
        if obj["kind"] != "CustomResourceDefinition":
            assert obj["metadata"]["labels"].items() >= SELECTOR.items(), obj["kind"]
        if obj["kind"].endswith("Binding"):
            assert obj["roleRef"]["name"] in {name, f"{name}-leader-election"} | {
                f"{name}-priorityclasses"
            }
            assert obj["subjects"][0]["name"] == name
    # The Lease is the operator's, whatever the objects are called.
    election = _one(objs, "Role", f"{name}-leader-election", NS)
    assert election["rules"][1]["resourceNames"] == ["mpi-operator"]
    assert _deployment(objs, name)["spec"]["selector"]["matchLabels"] == SELECTOR


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("rbac.scop=cluster", "at '/rbac': additional properties 'scop' not allowed"),
        ("rbacc.create=false", "at '': additional properties 'rbacc' not allowed"),
        (
            "serviceAccount.nmae=op",
            "at '/serviceAccount': additional properties 'nmae' not allowed",
        ),
        (
            "podSecurityContext.runAsUsr=1000",
            "at '/podSecurityContext': additional properties 'runAsUsr' not allowed",
        ),
        (
            "securityContext.capabilities.dorp[0]=ALL",
            "at '/securityContext/capabilities': additional properties 'dorp' not allowed",
        ),
        (
            "monitoring.podMonitor.intervall=1m",
            "at '/monitoring/podMonitor': additional properties 'intervall' not allowed",
        ),
        ("rbac.create=maybe", "at '/rbac/create'"),
    ],
)
def test_a_typo_fails_naming_the_key(helm: Path, setting: str, message: str) -> None:
    stderr = _refused(helm, "--set", setting)
    assert "values don't meet the specifications of the schema" in stderr, stderr
    assert message in stderr, stderr


def test_a_pod_label_may_not_change_the_selector(helm: Path) -> None:
    stderr = _refused(helm, "--set", "podLabels.app=other")
    assert "podLabels must not set app: the Deployment's selector sets it" in stderr


def _schema_nodes(node: Obj, path: str = "") -> list[tuple[str, Obj]]:
    found = [(path, node)]
    for key, child in node.get("properties", {}).items():
        found += _schema_nodes(child, f"{path}.{key}".lstrip("."))
    if isinstance(node.get("items"), dict):
        found += _schema_nodes(node["items"], f"{path}[]")
    return found


def test_the_schema_closes_every_object_it_defines() -> None:
    for path, node in _schema_nodes(SCHEMA):
        if "properties" in node:
            assert node.get("additionalProperties") is False, path or "(top)"


def _value_paths(values: Obj, prefix: str = "") -> list[str]:
    paths = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            paths += _value_paths(value, f"{path}.")
        else:
            paths.append(path)
    return paths


def _schema_has(path: str) -> bool:
    """Whether the schema allows ``path`` (a key it names, or one of a free-form map's)."""
    node: Any = SCHEMA
    for key in path.split("."):
        free = node.get("additionalProperties")
        node = node.get("properties", {}).get(key, free if isinstance(free, dict) else None)
        if node is None:
            return False
    return True


def _documented_values() -> list[str]:
    """The values docs/install.md's table names (``.x`` continues the previous name)."""
    text = (ROOT / "docs/install.md").read_text()
    table = text.split("| value | default | what |", 1)[1].split("\n\n", 1)[0]
    names: list[str] = []
    for row in table.splitlines()[2:]:
        last = ""
        for name in re.findall(r"`([^`]+)`", row.split("|")[1]):
            if name.startswith("."):
                name = last.rsplit(".", 1)[0] + name
            names.append(name)
            last = name
    return names


def test_the_schema_and_the_docs_know_every_value() -> None:
    documented = _documented_values()
    assert len(documented) > 30
    for name in documented:
        assert _schema_has(name), f"docs/install.md documents {name}, unknown to the schema"
    for path in _value_paths(VALUES):
        assert _schema_has(path), f"values.yaml has {path}, unknown to the schema"
        covered = any(path == d or path.startswith(f"{d}.") for d in documented)
        assert covered, f"docs/install.md's values table lacks {path}"


def test_the_documented_openshift_values_unset_the_uid(helm: Path, tmp_path: Path) -> None:
    text = (ROOT / "docs/install.md").read_text()
    block = text.split("```yaml\n# openshift-values.yaml\n", 1)[1].split("```", 1)[0]
    objs = _render(helm, tmp_path, yaml.safe_load(block))
    assert _pod(objs)["spec"]["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert _container(objs)["securityContext"]["runAsNonRoot"] is True
