"""The control plane's command lines and documents, built without starting anything."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from devcluster import components
from devcluster.audit import audit_args, audit_code, audit_user, read_audit_events
from devcluster.pki import Pki

PORTS = {
    "etcd": 2379,
    "etcd-peer": 2380,
    "kube-apiserver": 6443,
    "kube-controller-manager": 10257,
    "kube-scheduler": 10259,
}


@pytest.fixture
def layout(tmp_path: Path) -> components.Layout:
    return components.Layout(tmp_path, Pki(tmp_path / "pki"), tmp_path / "kubeconfig", PORTS)


def flags(args: list[str]) -> dict[str, str]:
    return dict(a.removeprefix("--").split("=", 1) for a in args[1:])


@pytest.mark.parametrize(
    ("full", "watch_cache", "plugins", "want", "absent"),
    [
        (
            False,
            False,
            [],
            {"disable-admission-plugins": "ServiceAccount", "watch-cache": "false"},
            ["enable-admission-plugins"],
        ),
        (
            True,
            True,
            ["OwnerReferencesPermissionEnforcement"],
            {
                "disable-admission-plugins": "TaintNodesByCondition",
                "enable-admission-plugins": "OwnerReferencesPermissionEnforcement",
            },
            ["watch-cache"],
        ),
    ],
)
def test_apiserver_flags_follow_the_shape(
    layout: components.Layout,
    full: bool,
    watch_cache: bool,
    plugins: list[str],
    want: dict[str, str],
    absent: list[str],
) -> None:
    args = components.apiserver_args(
        Path("/bin/kube-apiserver"),
        layout,
        full=full,
        watch_cache=watch_cache,
        admission_plugins=plugins,
        extra=["--audit-log-format=json"],
    )
    assert args[0] == "/bin/kube-apiserver"
    got = flags(args)
    assert got["secure-port"] == "6443"
    assert got["etcd-servers"] == "http://127.0.0.1:2379"
    assert got["bind-address"] == "127.0.0.1"
    assert got["audit-log-format"] == "json"
    for key, value in want.items():
        assert got[key] == value
    for key in absent:
        assert key not in got


@pytest.mark.parametrize(
    ("build", "component"),
    [
        (components.controller_manager_args, "kube-controller-manager"),
        (components.scheduler_args, "kube-scheduler"),
    ],
)
def test_components_listen_on_loopback_with_their_own_port(
    layout: components.Layout, build: components.ArgsBuilder, component: str
) -> None:
    got = flags(build(Path("/bin/x"), layout))
    assert got["bind-address"] == "127.0.0.1"
    assert got["secure-port"] == str(PORTS[component])
    assert got["kubeconfig"] == str(layout.kubeconfig)
    assert got["leader-elect"] == "false"


@pytest.mark.parametrize("build", [components.controller_manager_args, components.scheduler_args])
def test_the_scheduler_and_controller_manager_clients_are_not_the_bound(
    layout: components.Layout, build: components.ArgsBuilder
) -> None:
    """Their client budgets are above what a benchmark's burst of pods needs, so what
    is measured is the operator (kube-scheduler's default, 50 QPS, held 250 pods' bindings
    to 3 s)."""
    got = flags(build(Path("/bin/x"), layout))
    assert (got["kube-api-qps"], got["kube-api-burst"]) == ("500", "1000")


def test_etcd_listens_on_loopback_only(layout: components.Layout) -> None:
    got = flags(components.etcd_args(Path("/bin/etcd"), layout))
    assert got["listen-client-urls"] == "http://127.0.0.1:2379"
    assert got["listen-peer-urls"] == "http://127.0.0.1:2380"
    assert got["data-dir"] == str(layout.workdir / "etcd-data")


def test_fake_node_is_managed_by_kwok_and_has_gpus() -> None:
    node = components.fake_node("kwok-node-7")
    assert node["metadata"]["annotations"][components.KWOK_NODE_ANNOTATION] == "fake"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "kwok-node-7"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    node["status"]["capacity"]["cpu"] = "1"  # each node gets its own copy
    assert components.fake_node("other")["status"]["capacity"]["cpu"] == "64"


def test_kubeconfig_embeds_the_ca_and_the_user(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"PEM")
    doc = components.kubeconfig("https://127.0.0.1:1", ca, "alice", {"token": "t"})
    cluster = doc["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:1"
    assert base64.b64decode(cluster["certificate-authority-data"]) == b"PEM"
    assert doc["users"] == [{"name": "alice", "user": {"token": "t"}}]
    assert doc["contexts"][0]["context"]["user"] == "alice"


@pytest.mark.parametrize(
    ("users", "groups", "rules"),
    [
        (["bob"], [], [{"level": "Metadata", "users": ["bob"]}]),
        ([], ["g"], [{"level": "Metadata", "userGroups": ["g"]}]),
    ],
)
def test_audit_policy_audits_only_whom_it_names(
    tmp_path: Path, users: list[str], groups: list[str], rules: list[dict[str, object]]
) -> None:
    policy, log = tmp_path / "policy.yaml", tmp_path / "audit.log"
    args = audit_args(policy, log, users, groups)
    assert f"--audit-policy-file={policy}" in args
    assert f"--audit-log-path={log}" in args
    doc = yaml.safe_load(policy.read_text())
    assert doc["rules"] == [*rules, {"level": "None"}]


def test_read_audit_events_between_offsets_skips_partial_lines(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    first = b'{"user": {"username": "a"}, "responseStatus": {"code": 201}}\n'
    log.write_bytes(first + b'{"user": {"username": "b"}}\n{"user": {"user')
    events = read_audit_events(log)
    assert [audit_user(e) for e in events] == ["a", "b"]
    assert [audit_code(e) for e in events] == [201, 0]
    assert [audit_user(e) for e in read_audit_events(log, len(first))] == ["b"]
    assert read_audit_events(log, 0, len(first)) == events[:1]
    assert read_audit_events(tmp_path / "missing.log") == []


def test_with_the_workload_api_the_controller_manager_removes_podgroup_finalizers(
    layout: components.Layout,
) -> None:
    """kube-apiserver's PodGroupProtection admission puts a finalizer on every Workload
    API PodGroup; kube-controller-manager's podgroup-protection-controller, which runs
    only with GenericWorkload on there too, is what removes it."""
    got = flags(components.controller_manager_args(Path("kcm"), layout, workload_api=True))
    assert "podgroup-protection-controller" in got["controllers"].split(",")
    assert "GenericWorkload=true" in got["feature-gates"].split(",")
    without = flags(components.controller_manager_args(Path("kcm"), layout))
    assert "podgroup-protection-controller" not in without["controllers"].split(",")
    assert "feature-gates" not in without
