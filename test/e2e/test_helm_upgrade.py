"""``helm upgrade`` from the previous release's chart to this checkout's, with MPIJobs
running: the upgrade command of docs/operations/upgrade.md, as the page gives it.

**Which chart is the previous one.** The newest released version in CHANGELOG.md (its
first ``## [x.y.z] - <date>`` heading) names the release day; the previous chart is
charts/mpi-operator as of the newest commit that changed it on or before that day (end
of the day, UTC), taken from git history (``git archive``; a shallow clone lacks it and
fails, naming the fix). A chart change after the release, unreleased, is thus always
what the test upgrades *to*; the next release moves the rule forward with it.

Both charts run this checkout's operator image (``hack/build-operator-image.sh``): what
is tested is the chart's upgrade (Deployment, RBAC, CRD) under running jobs; an older
operator's jobs taken over by a newer one are tested on the real node by the move from
the Go operator.

The operator's pod runs on the real node (the chart's ``nodeSelector`` and
``tolerations``), the jobs on KWOK's nodes: their launchers run until the test ends them
(annotation ``complete-after``) after the upgrade, so they outlive it however long it
takes. Asserted: the Deployment rolled (a new pod template, a new pod Ready and leading,
the old one gone), the jobs stayed Running with the same pods throughout, and both
finish (Succeeded) under the new operator.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from examples_support import ROOT, apply, condition, items, mpijob
from test_helm_install import _adopt, _helm, _in_checkout, _run_helm, documented_upgrade_commands
from test_in_cluster_operator import NS, SELECTOR, _explain, _operator_image, _ready_operator

from devcluster import COMPLETE_AFTER, LocalCluster
from devcluster.nodeconfig import REAL_NODE_LABEL, REAL_NODE_TAINT
from devcluster.sample_jobs import pi_mpijob
from devcluster.testing import wait_until

Obj = dict[str, Any]
RELEASE = "mpi-operator"
CHART = "charts/mpi-operator"
JOBS = ("up-a", "up-b")
CRD = ROOT / "crd" / "kubeflow.org_mpijobs.yaml"
RELEASED = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.M)


def _git(*args: str) -> str:
    out = subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, f"git {' '.join(args)}: {out.stderr}"
    return out.stdout.strip()


def previous_chart(dest: Path) -> tuple[str, Path]:
    """The commit of the previous release's chart (the module's rule) and the chart
    extracted from it under ``dest``."""
    if _git("rev-parse", "--is-shallow-repository") == "true":
        pytest.fail("a shallow clone: `git fetch --unshallow` for the chart's history")
    found = RELEASED.search((ROOT / "CHANGELOG.md").read_text())
    assert found, "CHANGELOG.md names no released version"
    day = found.group(2)
    rev = _git("log", "-1", "--format=%H", f"--until={day} 23:59:59 +0000", "--", CHART)
    assert rev, f"no commit changed {CHART} by {day}"
    archive = subprocess.run(
        ["git", "archive", rev, CHART], cwd=ROOT, capture_output=True, timeout=60, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, timeout=60, check=True)
    return rev, dest / CHART


def _deployment(cluster: LocalCluster) -> Obj:
    status, body = cluster.request("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/{NS}")
    assert status == 200, body
    return body


def _operator_pods(cluster: LocalCluster) -> list[Obj]:
    return items(cluster, f"/api/v1/namespaces/{NS}/pods?labelSelector={SELECTOR}")


def _job_pods(cluster: LocalCluster, ns: str) -> dict[str, str]:
    """Every pod of the jobs, by name: its uid."""
    return {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in items(cluster, f"/api/v1/namespaces/{ns}/pods")
    }


def _all_running(cluster: LocalCluster, ns: str) -> bool:
    for name in JOBS:
        job = mpijob(cluster, ns, name)
        assert condition(job, "Failed") != "True", json.dumps(job.get("status"))
        assert condition(job, "Restarting") != "True", json.dumps(job.get("status"))
        if condition(job, "Running") != "True":
            return False
    return True


@pytest.fixture
def job_ns(real_cluster: LocalCluster) -> Iterator[str]:
    name = real_cluster.create_namespace("helm-upgrade")
    yield name
    real_cluster.delete_namespace(name)


@pytest.fixture
def old_release(real_cluster: LocalCluster, tmp_path: Path) -> Iterator[Path]:
    """The previous chart installed (the operator on the real node, Ready and leading);
    yields the helm binary. Afterwards: the release uninstalled, its namespace deleted and
    the checkout's CRD applied (the previous chart's CRD must not outlive a failure)."""
    helm = _helm()
    rev, chart = previous_chart(tmp_path)
    print(f"previous chart: {rev}")
    archive, image = _operator_image()
    assert real_cluster.node is not None
    repository, tag = image.rsplit(":", 1)
    real_cluster.node.import_image(archive, repository)
    key, value = REAL_NODE_LABEL
    values = {
        "image": {"repository": repository, "tag": tag},
        "nodeSelector": {key: value},
        "tolerations": [{"operator": "Equal", **REAL_NODE_TAINT}],
    }
    (tmp_path / "values.yaml").write_text(yaml.safe_dump(values))
    _adopt(real_cluster)
    try:
        args = ("--namespace", NS, "--create-namespace", "--values", str(tmp_path / "values.yaml"))
        _run_helm(real_cluster, helm, "install", RELEASE, str(chart), *args)
        _ready_operator(real_cluster)
        yield helm
    finally:
        print(_explain(real_cluster, NS))
        kubeconfig = f"--kubeconfig={real_cluster.kubeconfig}"
        subprocess.run(
            [helm, kubeconfig, "uninstall", RELEASE, "-n", NS, "--wait", "--timeout=90s"],
            capture_output=True,
            timeout=120,
            check=False,
        )
        real_cluster.kubectl("delete", "namespace", NS, "--timeout=90s", check=False)
        real_cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD))


def test_helm_upgrade_from_the_previous_chart_keeps_running_jobs(
    real_cluster: LocalCluster, old_release: Path, job_ns: str
) -> None:
    helm = old_release
    old_pod = _ready_operator(real_cluster)
    before = _deployment(real_cluster)
    for name in JOBS:
        apply(real_cluster, job_ns, pi_mpijob(name, launcher_exit=None))
    wait_until(lambda: _all_running(real_cluster, job_ns), 90, "both jobs Running")
    pods = _job_pods(real_cluster, job_ns)
    assert len(pods) == 2 * 3, pods

    (upgrade,) = [c for c in documented_upgrade_commands() if c[:2] == ["helm", "upgrade"]]
    assert CHART in upgrade, upgrade
    _run_helm(real_cluster, helm, *_in_checkout(upgrade[1:]))

    # The Deployment rolled: a new pod template, its pod Ready and leading, the old gone.
    new_pod = _ready_operator(real_cluster, not_named=old_pod["metadata"]["name"])
    hash_label = "pod-template-hash"
    assert new_pod["metadata"]["labels"][hash_label] != old_pod["metadata"]["labels"][hash_label]
    assert "readinessProbe" in new_pod["spec"]["containers"][0]  # this checkout's chart
    wait_until(
        lambda: (
            [p["metadata"]["name"] for p in _operator_pods(real_cluster)]
            == [new_pod["metadata"]["name"]]
        ),
        120,
        "the old operator pod gone",
    )
    after = _deployment(real_cluster)
    assert after["metadata"]["generation"] > before["metadata"]["generation"]
    assert after["status"]["observedGeneration"] == after["metadata"]["generation"]
    assert after["status"].get("updatedReplicas") == 1, after["status"]
    history = _run_helm(real_cluster, helm, "history", RELEASE, "-n", NS, "-o", "json").stdout
    statuses = [(r["revision"], r["status"]) for r in json.loads(history)]
    assert statuses == [(1, "superseded"), (2, "deployed")], history

    # The jobs ran on through it, with the same pods, and finish under the new operator.
    assert _all_running(real_cluster, job_ns)
    assert _job_pods(real_cluster, job_ns) == pods
    for name in JOBS:
        selector = f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=launcher"
        real_cluster.kubectl(
            "annotate", "pods", "-n", job_ns, "-l", selector, f"{COMPLETE_AFTER}=1s"
        )

    def succeeded() -> bool:
        done = [mpijob(real_cluster, job_ns, name) for name in JOBS]
        for job in done:
            assert condition(job, "Failed") != "True", json.dumps(job.get("status"))
        return all(condition(job, "Succeeded") == "True" for job in done)

    try:
        wait_until(succeeded, 90, "both jobs Succeeded")
    except BaseException:
        print(_explain(real_cluster, job_ns))
        raise
