"""The operator deployed as users deploy it: ``deploy/v2beta1/mpi-operator.yaml`` applied
with ``kubectl apply --server-side -k`` on the ``real`` shape, its image the one of
``hack/build-operator-image.sh`` (the project's wheel on a Debian bookworm base).

The only changes to the manifest are a kustomize overlay's: the image's name, and the real
node's nodeSelector and toleration on the Deployment's pod (the node is tainted; untainted,
the pod would land on a KWOK node, where nothing runs). The operator then runs in a
container under its ServiceAccount, with in-cluster configuration (the ``kubernetes``
Service, which kube-proxy forwards to kube-apiserver), and runs the pi example on the real
node; its pod, deleted during a job, comes back through the Deployment and the job still
succeeds."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from examples_support import DEPLOY, EXAMPLES, ROOT, apply, condition, items, mpijob

from devcluster import LocalCluster, builds
from devcluster.demo_job import load_mpijob
from devcluster.nodeconfig import REAL_NODE_LABEL, REAL_NODE_NAME, REAL_NODE_TAINT
from devcluster.sample_jobs import on_real_node
from devcluster.testing import wait_until

NS = "mpi-operator"
SELECTOR = "app=mpi-operator"
PI_RESULT = re.compile(r"pi is approximately 3\.14\d+ \(2 ranks")
#: A cold container start of the operator and of the MPI pods on a loaded 2-core machine.
RUN_TIMEOUT = 240.0
READY_TIMEOUT = 120.0

Obj = dict[str, Any]


def _operator_image() -> tuple[Path, str]:
    """The image of this checkout's wheel: ``make operator-image`` built it, or, after a
    change of the code, the script adds the wheel's layer to the cached base here."""
    builds.wait_for("operator-image")
    script = str(ROOT / "hack" / "build-operator-image.sh")
    for args in ([script], [script, "--print"]):
        out = subprocess.run(["bash", *args], capture_output=True, text=True, timeout=900)
        if out.returncode != 0:
            pytest.fail(f"{' '.join(args)}: {out.stderr.strip()}", pytrace=False)
    archive, image = out.stdout.split()
    return Path(archive), image


def _overlay(tmp_path: Path, image: str) -> Path:
    """A kustomization over a copy of the deploy file (kustomize reads only below its
    root): the image, and the real node's nodeSelector and toleration."""
    (tmp_path / "mpi-operator.yaml").write_text(DEPLOY.read_text())
    name, tag = image.rsplit(":", 1)
    key, value = REAL_NODE_LABEL
    patch = [
        {"op": "add", "path": "/spec/template/spec/nodeSelector", "value": {key: value}},
        {
            "op": "add",
            "path": "/spec/template/spec/tolerations",
            "value": [{"operator": "Equal", **REAL_NODE_TAINT}],
        },
    ]
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["mpi-operator.yaml"],
        "images": [{"name": "mpi-operator-python", "newName": name, "newTag": tag}],
        "patches": [
            {
                "target": {"kind": "Deployment", "name": "mpi-operator"},
                "patch": yaml.safe_dump(patch),
            }
        ],
    }
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return tmp_path


def _pods(cluster: LocalCluster) -> list[Obj]:
    return [
        p
        for p in items(cluster, f"/api/v1/namespaces/{NS}/pods?labelSelector={SELECTOR}")
        if not p["metadata"].get("deletionTimestamp")
    ]


def _ready(pod: Obj) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in pod.get("status", {}).get("conditions") or []
    )


def _ready_operator(cluster: LocalCluster, not_named: str = "") -> Obj:
    """The operator's one Ready pod (other than ``not_named``) once it leads: the Lease
    names its host, the pod."""

    def check() -> Obj | None:
        pods = [p for p in _pods(cluster) if p["metadata"]["name"] != not_named]
        ready = [p for p in pods if _ready(p)]
        if len(ready) != 1:
            return None
        name = ready[0]["metadata"]["name"]
        _, lease = cluster.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{NS}"
        )
        holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
        return ready[0] if holder.startswith(f"{name}_") else None

    try:
        pod: Obj = wait_until(check, READY_TIMEOUT, "the in-cluster operator Ready and leading")
    except BaseException:
        print(_explain(cluster, NS))
        raise
    return pod


def _explain(cluster: LocalCluster, ns: str) -> str:
    pods = cluster.kubectl("get", "pods", "-n", ns, "-o", "wide", check=False).stdout
    events = cluster.kubectl("get", "events", "-n", ns, check=False).stdout
    logs = cluster.kubectl("logs", "-n", NS, "-l", SELECTOR, "--tail=40", check=False)
    return f"{pods}\n{events}\n--- operator ---\n{logs.stdout}{logs.stderr}"


@pytest.fixture
def in_cluster_operator(real_cluster: LocalCluster, tmp_path: Path) -> Iterator[Obj]:
    """The Deployment of deploy/v2beta1/mpi-operator.yaml on the real node, and its pod
    once Ready and leading; the Deployment and its namespace deleted afterwards (the
    real node's other tests run their own operators)."""
    archive, image = _operator_image()
    assert real_cluster.node is not None
    real_cluster.node.import_image(archive, image.rsplit(":", 1)[0])
    try:
        real_cluster.kubectl("apply", "--server-side", "-k", str(_overlay(tmp_path, image)))
        yield _ready_operator(real_cluster)
    finally:
        print(_explain(real_cluster, NS))
        real_cluster.kubectl("delete", "deployment", "-n", NS, "mpi-operator", check=False)
        real_cluster.kubectl(
            "wait", "--for=delete", "pod", "-n", NS, "-l", SELECTOR, "--timeout=90s", check=False
        )
        real_cluster.kubectl("delete", "namespace", NS, "--timeout=90s", check=False)


@pytest.fixture
def job_ns(real_cluster: LocalCluster) -> Iterator[str]:
    name = real_cluster.create_namespace("in-cluster")
    yield name
    real_cluster.delete_namespace(name)


def _wait_succeeded(cluster: LocalCluster, ns: str, name: str) -> Obj:
    def check() -> Obj | None:
        job = mpijob(cluster, ns, name)
        assert condition(job, "Failed") != "True", json.dumps(job.get("status"))
        return job if condition(job, "Succeeded") == "True" else None

    try:
        done: Obj = wait_until(check, RUN_TIMEOUT, f"mpijob {name} Succeeded")
    except BaseException:
        print(_explain(cluster, ns))
        raise
    return done


def _launcher_log(cluster: LocalCluster, ns: str, name: str) -> str:
    pods = [
        p["metadata"]["name"]
        for p in items(cluster, f"/api/v1/namespaces/{ns}/pods")
        if p["metadata"]["name"].startswith(f"{name}-launcher")
    ]
    assert len(pods) == 1, pods
    return str(cluster.kubectl("logs", "-n", ns, pods[0]).stdout)


def _pi_job(name: str) -> Obj:
    job = load_mpijob(EXAMPLES / "pi" / "pi.yaml")
    job["metadata"]["name"] = name
    return on_real_node(job)


def test_deployed_operator_runs_pi_and_survives_its_pod_deleted_during_a_job(
    real_cluster: LocalCluster, in_cluster_operator: Obj, job_ns: str
) -> None:
    pod = in_cluster_operator
    # As the manifest runs it: its ServiceAccount, on the real node, the image given.
    assert pod["spec"]["serviceAccountName"] == "mpi-operator"
    assert pod["spec"]["nodeName"] == REAL_NODE_NAME
    (container,) = pod["spec"]["containers"]
    assert container["image"].startswith("localhost/mpi-operator-python:")
    assert container["args"][0] == "--lock-namespace=$(POD_NAMESPACE)"

    apply(real_cluster, job_ns, _pi_job("pi"))
    _wait_succeeded(real_cluster, job_ns, "pi")
    log = _launcher_log(real_cluster, job_ns, "pi")
    assert PI_RESULT.search(log), log

    # Its pod deleted once the next job's workers exist: the Deployment starts another,
    # which takes the Lease over and finishes the job.
    apply(real_cluster, job_ns, _pi_job("pi-again"))
    workers = (
        f"/api/v1/namespaces/{job_ns}/pods?labelSelector=training.kubeflow.org/job-name=pi-again"
    )
    wait_until(lambda: len(items(real_cluster, workers)) >= 2, RUN_TIMEOUT, "pi-again's pods")
    assert condition(mpijob(real_cluster, job_ns, "pi-again"), "Succeeded") != "True"
    old = pod["metadata"]["name"]
    real_cluster.kubectl("delete", "pod", "-n", NS, old)
    new = _ready_operator(real_cluster, not_named=old)
    assert new["metadata"]["uid"] != pod["metadata"]["uid"]
    _wait_succeeded(real_cluster, job_ns, "pi-again")
    log = _launcher_log(real_cluster, job_ns, "pi-again")
    assert PI_RESULT.search(log), log
