"""docs/migrate.md on the real node, with jobs running: the Go operator (kubeflow/
mpi-operator v0.8.2, built from the Go module proxy by hack/install-reference-operator.sh,
as an image of its binary) installed from its own manifests, replaced in place by ours,
then rolled back to it, in both layouts:

* standalone: its ``deploy/v2beta1/mpi-operator.yaml``, then ours, then its again
  (``kubectl apply --server-side -f``), Deployment and Lease in ``mpi-operator``;
* kubeflow: its ``manifests/overlays/kubeflow``, then ours (``kubectl apply
  --server-side -k``), Deployment and Lease in ``kubeflow``.

The manifests are applied unmodified, with the commands the doc gives: for the time of
this module the real node is untainted and the KWOK nodes cordoned, so the operators'
pods land on the real node as they would on a user's. The cluster's CRD is deleted first
(a user's cluster has the Go operator's, applied by kubectl) and ours restored at the end.

Per layout: job A starts under the Go operator and is running (launcher running, workers
Ready) when ours takes over, and ours finishes it; job B starts under ours and is running
when the Go operator comes back, and it finishes it. The launchers wait for a file the
test writes (``kubectl exec``) after the swap, so a job outlives the swap however long
the swap takes. A :class:`migrate_support.Recorder` samples the jobs throughout.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from examples_support import DEPLOY, EXAMPLES, ROOT, apply, condition, items, mpijob
from migrate_support import JOB_NAME, JOB_ROLE, Recorder, conditions_continuous
from test_helm_install import made_image
from test_in_cluster_operator import _explain

from devcluster import LocalCluster
from devcluster.demo_job import load_mpijob
from devcluster.nodeconfig import REAL_NODE_NAME, REAL_NODE_TAINT
from devcluster.sample_jobs import on_real_node
from devcluster.testing import wait_until

Obj = dict[str, Any]
REFERENCE_MODULE = "github.com/kubeflow/mpi-operator@v0.8.2"
CRD = "mpijobs.kubeflow.org"
OURS = "mpi-operator-python:"
THEIRS = "mpioperator/mpi-operator:"
RELEASE = "/tmp/release"
TIMEOUT = 180.0
MIGRATE_DOC = ROOT / "docs" / "migrate.md"
LEADER_ROLE = "role,rolebinding mpi-operator-leader-election"


@dataclass(frozen=True)
class Layout:
    ns: str
    #: `kubectl apply --server-side` arguments: the Go operator's, then ours.
    theirs: tuple[str, str]
    ours: tuple[str, str]

    def documented(self, reference: Path) -> None:
        """docs/migrate.md gives this layout's commands as the test runs them."""
        doc = MIGRATE_DOC.read_text()
        flag, path = self.ours
        assert f"kubectl apply --server-side {flag} {Path(path).relative_to(ROOT)}\n" in doc
        rollback = _doc_rollback()
        flag, path = self.theirs
        theirs = f'kubectl apply --server-side {flag} "$REF/{Path(path).relative_to(reference)}"'
        assert f"{theirs}\n" in rollback
        assert f"kubectl -n {self.ns} delete {LEADER_ROLE}\n" in rollback


def _doc_rollback() -> str:
    """docs/migrate.md's rollback commands (its first shell block after the heading)."""
    text = MIGRATE_DOC.read_text()
    section = text[text.index("## Rolling back to the Go operator") :]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


@pytest.fixture(scope="module")
def reference_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go operator's release files, found as docs/migrate.md's ``REF=`` line finds
    them (run as written)."""
    (line,) = [x for x in _doc_rollback().splitlines() if x.startswith("REF=")]
    out = subprocess.run(
        ["bash", "-c", f"set -euo pipefail; {line}; echo $REF"],
        cwd=tmp_path_factory.mktemp("gomod"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, f"{line}: {out.stdout}{out.stderr}"
    assert REFERENCE_MODULE in line
    return Path(out.stdout.strip())


def _layouts(reference: Path) -> dict[str, Layout]:
    return {
        "standalone": Layout(
            "mpi-operator",
            ("-f", str(reference / "deploy/v2beta1/mpi-operator.yaml")),
            ("-f", str(DEPLOY)),
        ),
        "kubeflow": Layout(
            "kubeflow",
            ("-k", str(reference / "manifests/overlays/kubeflow")),
            ("-k", str(ROOT / "manifests/overlays/kubeflow")),
        ),
    }


@pytest.fixture(scope="module")
def images(real_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Both operators' images in the node's containerd, under the names the manifests
    give (the Go operator's ``mpioperator/mpi-operator:0.8.2``, pulled if not present:
    present, it is not pulled)."""
    start = time.monotonic()
    out = subprocess.run(
        [ROOT / "hack/install-reference-operator.sh", "--image"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert out.returncode == 0, out.stderr
    archive, name = out.stdout.split()
    assert name.startswith(THEIRS)
    ours = made_image(tmp_path_factory.mktemp("image") / "mpi-operator.oci.tar")
    built = time.monotonic()
    assert real_cluster.node is not None
    real_cluster.node.import_image(Path(archive))
    real_cluster.node.import_image(ours)
    print(
        f"migrate: images built in {built - start:.1f}s, imported in "
        f"{time.monotonic() - built:.1f}s"
    )


@pytest.fixture(scope="module")
def user_cluster(
    real_cluster: LocalCluster, images: None, reference_dir: Path
) -> Iterator[LocalCluster]:
    """The real cluster as a user's: no MPIJob CRD before the Go operator's, pods
    without a nodeSelector on the real node. Restored afterwards: the operators and
    their namespaces gone, our CRD back, the node tainted, the KWOK nodes schedulable."""
    kwok = [
        n["metadata"]["name"]
        for n in items(real_cluster, "/api/v1/nodes")
        if n["metadata"]["name"] != REAL_NODE_NAME
    ]
    taint = "{key}={value}:{effect}".format(**REAL_NODE_TAINT)
    real_cluster.kubectl("delete", "crd", CRD, "--ignore-not-found", "--wait=true")
    real_cluster.kubectl("cordon", *kwok)
    real_cluster.kubectl("taint", "node", REAL_NODE_NAME, f"{taint}-")
    try:
        yield real_cluster
    finally:
        for ns in ("mpi-operator", "kubeflow"):
            real_cluster.kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false")
        reference = reference_dir / "deploy/v2beta1/mpi-operator.yaml"
        real_cluster.kubectl("delete", "-f", str(reference), "--ignore-not-found", check=False)
        for ns in ("mpi-operator", "kubeflow"):
            real_cluster.kubectl(
                "wait", "--for=delete", f"namespace/{ns}", "--timeout=120s", check=False
            )
        real_cluster.kubectl("taint", "node", REAL_NODE_NAME, taint, "--overwrite")
        real_cluster.kubectl("uncordon", *kwok)
        real_cluster.install_crds([ROOT / "crd" / f"kubeflow.org_{CRD.split('.')[0]}.yaml"])


def _job(name: str) -> Obj:
    """The pi example whose launcher waits for the test's go-ahead before mpirun."""
    job = load_mpijob(EXAMPLES / "pi" / "pi.yaml")
    job["metadata"]["name"] = name
    job["spec"]["runPolicy"].pop("ttlSecondsAfterFinished", None)
    (launcher,) = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
    mpirun = " ".join([*launcher["command"], *launcher["args"]])
    launcher["command"] = ["sh", "-c", f"until [ -e {RELEASE} ]; do sleep 0.2; done; {mpirun}"]
    del launcher["args"]
    return on_real_node(job)


def _ready(pod: Obj) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in pod.get("status", {}).get("conditions") or []
    )


def _running(cluster: LocalCluster, ns: str, name: str) -> dict[str, str]:
    """Waits until ``name`` is Running with its launcher running and its workers Ready;
    its pods' uids by name."""

    def check() -> dict[str, str] | None:
        pods = items(cluster, f"/api/v1/namespaces/{ns}/pods?labelSelector={JOB_NAME}={name}")
        roles = [p["metadata"]["labels"].get(JOB_ROLE) for p in pods]
        up = [
            p
            for p in pods
            if p["status"].get("phase") == "Running"
            and (_ready(p) or p["metadata"]["labels"].get(JOB_ROLE) == "launcher")
        ]
        if sorted(roles) != ["launcher", "worker", "worker"] or len(up) != 3:
            return None
        if condition(mpijob(cluster, ns, name), "Running") != "True":
            return None
        return {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}

    uids: dict[str, str] = _waiting(cluster, ns, check, f"{name} running")
    return uids


def _waiting(cluster: LocalCluster, ns: str, check: Any, what: str) -> Any:
    try:
        return wait_until(check, TIMEOUT, what)
    except BaseException:
        print(_explain(cluster, ns))
        raise


def _leading(cluster: LocalCluster, ns: str, image: str) -> Obj:
    """The one operator pod left in ``ns`` once it runs ``image`` and holds the Lease
    (the other operator's pod gone, terminating ones included)."""

    def check() -> Obj | None:
        pods = items(cluster, f"/api/v1/namespaces/{ns}/pods?labelSelector=app=mpi-operator")
        if len(pods) != 1 or not pods[0]["spec"]["containers"][0]["image"].startswith(image):
            return None
        if pods[0]["metadata"].get("deletionTimestamp") or not _ready(pods[0]):
            return None
        _, lease = cluster.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/mpi-operator"
        )
        holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
        return pods[0] if holder.startswith(f"{pods[0]['metadata']['name']}_") else None

    pod: Obj = _waiting(cluster, ns, check, f"{image} leading in {ns}")
    return pod


def _release(cluster: LocalCluster, ns: str, name: str) -> None:
    (launcher,) = items(
        cluster,
        f"/api/v1/namespaces/{ns}/pods?labelSelector={JOB_NAME}={name},{JOB_ROLE}=launcher",
    )
    cluster.kubectl("exec", "-n", ns, launcher["metadata"]["name"], "--", "touch", RELEASE)


def _succeeded(cluster: LocalCluster, ns: str, name: str) -> float:
    def check() -> bool:
        job = mpijob(cluster, ns, name)
        assert condition(job, "Failed") != "True", json.dumps(job.get("status"))
        return condition(job, "Succeeded") == "True"

    _waiting(cluster, ns, check, f"{name} Succeeded")
    return time.monotonic()


@pytest.fixture
def job_ns(real_cluster: LocalCluster) -> Iterator[str]:
    name = real_cluster.create_namespace("migrate")
    yield name
    real_cluster.delete_namespace(name)


@pytest.fixture(params=["standalone", "kubeflow"])
def layout(
    request: pytest.FixtureRequest, user_cluster: LocalCluster, reference_dir: Path
) -> Iterator[tuple[str, Layout]]:
    """A layout's name and commands; its operator uninstalled afterwards (the next
    layout's would be a second leader), its jobs' namespace deleted first."""
    lay = _layouts(reference_dir)[request.param]
    lay.documented(reference_dir)
    if lay.ns == "kubeflow":  # Kubeflow's own namespace, which neither overlay creates
        user_cluster.kubectl("create", "namespace", lay.ns)
    yield request.param, lay
    user_cluster.kubectl("delete", "deployment", "-n", lay.ns, "mpi-operator", check=False)
    user_cluster.kubectl(
        "wait",
        "--for=delete",
        "pod",
        "-n",
        lay.ns,
        "-l",
        "app=mpi-operator",
        "--timeout=90s",
        check=False,
    )


def test_running_jobs_finish_across_the_move_and_the_rollback(
    user_cluster: LocalCluster, layout: tuple[str, Layout], job_ns: str
) -> None:
    cluster = user_cluster
    name, lay = layout
    ns = lay.ns
    with Recorder(cluster, ns, job_ns) as rec:
        cluster.kubectl("apply", "--server-side", *lay.theirs)
        theirs = _leading(cluster, ns, THEIRS)
        apply(cluster, job_ns, _job("a"))
        pods_a = _running(cluster, job_ns, "a")

        # Ours over theirs: the same Deployment, updated in place.
        swapped = time.monotonic()
        cluster.kubectl("apply", "--server-side", *lay.ours)
        ours = _leading(cluster, ns, OURS)
        took_over = time.monotonic()
        apply(cluster, job_ns, _job("b"))
        pods_b = _running(cluster, job_ns, "b")
        assert mpijob(cluster, job_ns, "b")["status"]["state"] == "Running"  # ours wrote it
        _release(cluster, job_ns, "a")
        a_done = _succeeded(cluster, job_ns, "a")

        # Back to theirs, as docs/migrate.md rolls back.
        rolled = time.monotonic()
        cluster.kubectl("apply", "--server-side", *lay.theirs)
        cluster.kubectl("-n", ns, "delete", *LEADER_ROLE.split())
        again = _leading(cluster, ns, THEIRS)
        rolled_back = time.monotonic()
        # The Go operator's CRD prunes the status fields only ours has.
        assert "state" not in mpijob(cluster, job_ns, "b")["status"]
        _release(cluster, job_ns, "b")
        b_done = _succeeded(cluster, job_ns, "b")

    deployments = cluster.kubectl(
        "get", "deployments", "-A", "-l", "app.kubernetes.io/name=mpi-operator", "-o", "json"
    )
    (deployment,) = json.loads(deployments.stdout)["items"]
    assert deployment["metadata"]["namespace"] == ns
    assert rec.holder_at(a_done) == ours["metadata"]["name"]  # ours finished a
    assert rec.holder_at(b_done) == again["metadata"]["name"]  # theirs finished b
    assert theirs["metadata"]["uid"] != again["metadata"]["uid"]
    for job, pods in (("a", pods_a), ("b", pods_b)):
        seen = rec.pod_uids(job)
        assert seen == {uid: pod for pod, uid in pods.items()}, (job, seen, pods)
        assert len(rec.pod_uids(job, "launcher")) == 1
        assert len(rec.launcher_job_uids(job)) == 1
        assert conditions_continuous(rec.statuses(job)) == []
        status = mpijob(cluster, job_ns, job)["status"]
        assert {c["type"] for c in status["conditions"]} == {"Created", "Running", "Succeeded"}
    print(
        f"migrate {name}: ours leading {took_over - swapped:.1f}s after apply "
        f"({rec.leaderless(swapped):.1f}s without a leader), theirs back "
        f"{rolled_back - rolled:.1f}s after apply ({rec.leaderless(rolled):.1f}s); "
        f"pods kept a={len(pods_a)} b={len(pods_b)}; {len(rec.samples)} samples"
    )
