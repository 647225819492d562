"""The api-only local control plane, through the real kubectl and kube-apiserver."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from devcluster import LocalCluster, wait_for


def _server_binary_version(cluster: LocalCluster) -> str:
    out = subprocess.run(
        [str(cluster.bins["kube-apiserver"]), "--version"], capture_output=True, text=True
    )
    m = re.search(r"v\d+\.\d+\.\d+\S*", out.stdout)
    assert m, out.stdout + out.stderr
    return m.group(0)


def test_kubectl_version_shows_the_built_server_version(api_cluster: LocalCluster) -> None:
    out = json.loads(api_cluster.kubectl("version", "-o", "json").stdout)
    server = out["serverVersion"]
    assert server["gitVersion"] == _server_binary_version(api_cluster)
    assert re.fullmatch(r"v1\.\d+\.\d+", server["gitVersion"])
    assert server["major"] == "1"
    assert server["minor"] == server["gitVersion"].split(".")[1]
    client = out["clientVersion"]
    assert abs(int(client["minor"].rstrip("+")) - int(server["minor"])) <= 1


def test_server_is_https_on_loopback(api_cluster: LocalCluster) -> None:
    assert re.fullmatch(r"https://127\.0\.0\.1:\d+", api_cluster.server)
    assert api_cluster.kubeconfig.is_file()
    status, _ = api_cluster.request("GET", "/readyz")
    assert status == 200


def test_podgroup_crds_are_established(api_cluster: LocalCluster, namespace: str) -> None:
    crds = json.loads(api_cluster.kubectl("get", "crd", "-o", "json").stdout)["items"]
    names = {c["metadata"]["name"] for c in crds}
    assert {"podgroups.scheduling.volcano.sh", "podgroups.scheduling.x-k8s.io"} <= names
    for crd in crds:
        conds = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conds.get("Established") == "True", crd["metadata"]["name"]
    api_cluster.kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        input=yaml.safe_dump_all(
            [
                {
                    "apiVersion": "scheduling.volcano.sh/v1beta1",
                    "kind": "PodGroup",
                    "metadata": {"name": "pg"},
                    "spec": {"minMember": 2},
                },
                {
                    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                    "kind": "PodGroup",
                    "metadata": {"name": "pg"},
                    "spec": {"minMember": 2},
                },
            ]
        ),
    )
    got = api_cluster.kubectl("get", "podgroups.scheduling.volcano.sh/pg", "-n", namespace)
    assert "pg" in got.stdout


def test_crds_of_the_repository_are_installed(api_cluster: LocalCluster) -> None:
    crd_dir = Path(__file__).resolve().parents[2] / "crd"
    expected = set()
    for f in sorted(crd_dir.glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                expected.add(doc["metadata"]["name"])
    if not expected:
        pytest.skip("crd/ holds no CustomResourceDefinition yet")
    out = api_cluster.kubectl("get", "crd", "-o", "name").stdout.split()
    assert {f"customresourcedefinition.apiextensions.k8s.io/{n}" for n in expected} <= set(out)


def _sa_kubeconfig(cluster: LocalCluster, token: str, path: Path) -> Path:
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": admin["clusters"],
                "users": [{"name": "sa", "user": {"token": token}}],
                "contexts": [{"name": "sa", "context": {"cluster": "localcluster", "user": "sa"}}],
                "current-context": "sa",
            }
        )
    )
    return path


def test_serviceaccount_token_and_rbac(
    api_cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    api_cluster.kubectl("create", "serviceaccount", "robot", "-n", namespace)
    token = api_cluster.kubectl("create", "token", "robot", "-n", namespace).stdout.strip()
    assert token.count(".") == 2  # a JWT
    kubeconfig = _sa_kubeconfig(api_cluster, token, tmp_path / "sa-kubeconfig")

    def as_sa(*args: str) -> subprocess.CompletedProcess[str]:
        return api_cluster.kubectl(f"--kubeconfig={kubeconfig}", *args, check=False)

    whoami = as_sa("auth", "whoami", "-o", "json")
    assert whoami.returncode == 0, whoami.stderr
    user = json.loads(whoami.stdout)["status"]["userInfo"]["username"]
    assert user == f"system:serviceaccount:{namespace}:robot"

    denied = as_sa("get", "configmaps", "-n", namespace)
    assert denied.returncode != 0
    assert "forbidden" in denied.stderr.lower()

    api_cluster.kubectl(
        "create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps", "-n", namespace
    )
    api_cluster.kubectl(
        "create",
        "rolebinding",
        "robot-cm-reader",
        "--role=cm-reader",
        f"--serviceaccount={namespace}:robot",
        "-n",
        namespace,
    )
    wait_for(lambda: as_sa("get", "configmaps", "-n", namespace).returncode == 0, 30, "RBAC grant")
    # Still denied what was not granted.
    assert "forbidden" in as_sa("get", "secrets", "-n", namespace).stderr.lower()
    assert as_sa("auth", "can-i", "delete", "configmaps", "-n", namespace).stdout.strip() == "no"
    # A token with a wrong signature is rejected.
    bad = _sa_kubeconfig(api_cluster, token[:-4] + "AAAA", tmp_path / "bad-kubeconfig")
    out = api_cluster.kubectl(f"--kubeconfig={bad}", "get", "configmaps", check=False)
    assert out.returncode != 0
    assert "unauthorized" in out.stderr.lower()


def test_a_cluster_admin_service_account_may_be_asked_for_twice(
    api_cluster: LocalCluster, namespace: str
) -> None:
    """A cluster restarted on its old data already has the account and its binding."""
    for _ in range(2):
        api_cluster.cluster_admin_service_account(namespace, "admin-robot")
    user = f"--as=system:serviceaccount:{namespace}:admin-robot"
    can = api_cluster.kubectl("auth", "can-i", "delete", "nodes", user, check=False)
    assert can.stdout.strip() == "yes", can.stderr
    api_cluster.kubectl(
        "delete", "clusterrolebinding", f"{namespace}-admin-robot-admin", "--ignore-not-found"
    )


def test_stop_start_restart_apiserver(api_cluster: LocalCluster, namespace: str) -> None:
    api_cluster.kubectl("create", "configmap", "survivor", "--from-literal=a=1", "-n", namespace)
    api_cluster.stop_apiserver()
    down = api_cluster.kubectl("get", "configmap", "survivor", "-n", namespace, check=False)
    assert down.returncode != 0
    assert "refused" in down.stderr or "connect" in down.stderr
    api_cluster.start_apiserver()
    got = api_cluster.kubectl(
        "get", "configmap", "survivor", "-n", namespace, "-o", "jsonpath={.data.a}"
    )
    assert got.stdout == "1"
    api_cluster.restart_apiserver()
    got = api_cluster.kubectl(
        "get", "configmap", "survivor", "-n", namespace, "-o", "jsonpath={.data.a}"
    )
    assert got.stdout == "1"


def test_compact_etcd_expires_old_resource_versions(
    api_cluster: LocalCluster, namespace: str
) -> None:
    api_cluster.kubectl("create", "configmap", "c", "--from-literal=v=0", "-n", namespace)
    old_rv = api_cluster.kubectl(
        "get", "configmap", "c", "-n", namespace, "-o", "jsonpath={.metadata.resourceVersion}"
    ).stdout
    for i in range(1, 4):
        api_cluster.kubectl(
            "patch",
            "configmap",
            "c",
            "-n",
            namespace,
            "--type=merge",
            "-p",
            json.dumps({"data": {"v": str(i)}}),
        )
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    # Before compaction, a watch from the old resourceVersion replays the updates.
    before = api_cluster.kubectl(
        "get", "--raw", f"{path}?watch=1&resourceVersion={old_rv}&timeoutSeconds=1"
    )
    assert '"type":"MODIFIED"' in before.stdout.replace(" ", "")

    api_cluster.compact_etcd()
    after = api_cluster.kubectl(
        "get", "--raw", f"{path}?watch=1&resourceVersion={old_rv}&timeoutSeconds=5", check=False
    )
    text = (after.stdout + after.stderr).replace(" ", "")
    assert "tooold" in text.lower().replace(" ", "") or '"code":410' in text, text
    # A fresh list still works and gives a resourceVersion one can watch from.
    api_cluster.kubectl("get", "configmap", "c", "-n", namespace)
