"""The full local control plane (KWOK fake nodes), through the real kubectl."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster import (
    COMPLETE_AFTER,
    EVICT_AFTER,
    EXIT_CODE,
    LocalCluster,
    wait_for,
)
from devcluster.procs import pid_alive

ROOT = Path(__file__).resolve().parents[2]


def _get(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def _apply(cluster: LocalCluster, namespace: str, *objs: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump_all(objs))


def _pod(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }


def test_nodes_are_ready_kwok_nodes_with_gpus(full_cluster: LocalCluster) -> None:
    nodes = _get(full_cluster, "nodes")["items"]
    assert len(nodes) >= 2
    for node in nodes:
        conds = {c["type"]: c["status"] for c in node["status"]["conditions"]}
        assert conds["Ready"] == "True"
        assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
        assert int(node["status"]["allocatable"]["nvidia.com/gpu"]) >= 1
    out = full_cluster.kubectl("get", "nodes").stdout
    assert out.count(" Ready ") == len(nodes)


def test_pod_runs_and_is_ready(full_cluster: LocalCluster, full_namespace: str) -> None:
    _apply(full_cluster, full_namespace, _pod("runner", {}))
    full_cluster.kubectl(
        "wait", "--for=condition=Ready", "pod/runner", "-n", full_namespace, "--timeout=60s"
    )
    pod = _get(full_cluster, "pod", "runner", "-n", full_namespace)
    assert pod["status"]["phase"] == "Running"
    assert pod["spec"]["nodeName"].startswith("kwok-node-")
    assert pod["status"]["podIP"]


def test_job_runs_to_complete(full_cluster: LocalCluster, full_namespace: str) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "done"},
        "spec": {
            "completions": 2,
            "parallelism": 2,
            "template": {
                "metadata": {"annotations": {COMPLETE_AFTER: "1s"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox"}],
                },
            },
        },
    }
    _apply(full_cluster, full_namespace, job)
    full_cluster.kubectl(
        "wait", "--for=condition=Complete", "job/done", "-n", full_namespace, "--timeout=90s"
    )
    status = _get(full_cluster, "job", "done", "-n", full_namespace)["status"]
    assert status["succeeded"] == 2


def test_pod_fails_with_the_exit_code_asked_for(
    full_cluster: LocalCluster, full_namespace: str
) -> None:
    _apply(full_cluster, full_namespace, _pod("crash", {COMPLETE_AFTER: "1s", EXIT_CODE: "3"}))
    full_cluster.kubectl(
        "wait",
        "--for=jsonpath={.status.phase}=Failed",
        "pod/crash",
        "-n",
        full_namespace,
        "--timeout=60s",
    )
    pod = _get(full_cluster, "pod", "crash", "-n", full_namespace)
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 3
    assert terminated["reason"] == "Error"


def test_pod_is_evicted(full_cluster: LocalCluster, full_namespace: str) -> None:
    _apply(full_cluster, full_namespace, _pod("evictee", {EVICT_AFTER: "1s"}))
    full_cluster.kubectl(
        "wait",
        "--for=jsonpath={.status.phase}=Failed",
        "pod/evictee",
        "-n",
        full_namespace,
        "--timeout=60s",
    )
    pod = _get(full_cluster, "pod", "evictee", "-n", full_namespace)
    assert pod["status"]["reason"] == "Evicted"
    conds = {c["type"]: c for c in pod["status"]["conditions"]}
    assert conds["DisruptionTarget"]["status"] == "True"


def test_garbage_collector_deletes_owned_objects(
    full_cluster: LocalCluster, full_namespace: str
) -> None:
    ns = full_namespace
    full_cluster.kubectl("create", "configmap", "owner", "-n", ns)
    uid = full_cluster.kubectl(
        "get", "configmap", "owner", "-n", ns, "-o", "jsonpath={.metadata.uid}"
    ).stdout
    owned = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "owned",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}
            ],
        },
    }
    _apply(full_cluster, ns, owned)
    full_cluster.kubectl("delete", "configmap", "owner", "-n", ns)
    wait_for(
        lambda: (
            full_cluster.kubectl("get", "configmap", "owned", "-n", ns, check=False).stderr.find(
                "NotFound"
            )
            >= 0
        ),
        60,
        "the garbage collector to delete the owned ConfigMap",
    )


def test_deleting_a_job_deletes_its_pods(full_cluster: LocalCluster, full_namespace: str) -> None:
    ns = full_namespace
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "forever"},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox"}],
                },
            },
        },
    }
    _apply(full_cluster, ns, job)

    def running() -> bool:
        pods = _get(full_cluster, "pods", "-n", ns, "-l", "job-name=forever")["items"]
        return len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods)

    wait_for(running, 60, "the Job's pods to run")
    full_cluster.kubectl("delete", "job", "forever", "-n", ns)  # cascade=background
    wait_for(
        lambda: not _get(full_cluster, "pods", "-n", ns, "-l", "job-name=forever")["items"],
        90,
        "the garbage collector to delete the Job's pods",
    )


def test_kubectl_version_and_whoami(full_cluster: LocalCluster) -> None:
    server = json.loads(full_cluster.kubectl("version", "-o", "json").stdout)["serverVersion"]
    assert server["gitVersion"].startswith("v1.")
    whoami = json.loads(full_cluster.kubectl("auth", "whoami", "-o", "json").stdout)
    assert "system:masters" in whoami["status"]["userInfo"]["groups"]


def _processes_under(path: Path) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmdline = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(path) in cmdline and pid_alive(int(d.name)):
            found.append(int(d.name))
    return found


@pytest.mark.full_cluster
@pytest.mark.timeout(600)
def test_up_then_down_leaves_no_process() -> None:
    state = ROOT / ".cluster" / "state.json"
    if state.exists():
        pytest.skip("a developer cluster is recorded in .cluster/state.json; not touching it")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    # Exactly the commands of docs/development/index.md: make -s cluster-up / make cluster-down.
    cmd = ["make", "-s"]
    try:
        up = subprocess.run(
            [*cmd, "cluster-up"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert up.returncode == 0, up.stderr
        kubeconfig = ROOT / ".cluster" / "kubeconfig"
        assert up.stdout == f"export KUBECONFIG={kubeconfig}\n"
        pids = [p["pid"] for p in json.loads(state.read_text())["processes"]]
        assert len(pids) == 5 and all(pid_alive(p) for p in pids)  # the command has exited

        kubectl = json.loads(state.read_text())["processes"][1]["args"][0]  # kube-apiserver
        kubectl = str(Path(kubectl).with_name("kubectl"))
        nodes = subprocess.run(
            [kubectl, f"--kubeconfig={kubeconfig}", "get", "nodes", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert nodes.returncode == 0, nodes.stderr
        assert "node/kwok-node-0" in nodes.stdout
        # `up` again reuses the running cluster.
        again = subprocess.run(
            [*cmd, "cluster-up"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert again.stdout == up.stdout
        assert [p["pid"] for p in json.loads(state.read_text())["processes"]] == pids
    finally:
        down = subprocess.run(
            [*cmd, "cluster-down"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
    assert down.returncode == 0, down.stderr
    assert not state.exists()
    assert not any(pid_alive(p) for p in pids)
    assert _processes_under(ROOT / ".cluster") == []
