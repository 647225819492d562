"""The install manifests' RBAC is sufficient, and no more.

The operator runs under the manifests' own ServiceAccount (a token minted with
``kubectl create token``), also with the t9k component's rules running a T9k MPIJob:
cluster-wide as the Deployment runs it, with the namespaced overlay's Role, and with
gang scheduling. It runs the pi example to Succeeded with no authorization failure in
its log nor in the API server's audit log (the session cluster audits every
ServiceAccount). (test_deploy_dry_run.py passes the manifests through a dry run.)
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import OVERLAYS, RBAC_KINDS, T9K_CRD_NAME, kustomize, user_kustomization
from examples_support import (
    DEPLOY,
    EXAMPLES,
    ROOT,
    VolcanoStandIn,
    apply,
    docs,
    items,
    kwok_example,
    service_account_kubeconfig,
    start_operator,
    stop_operator,
    wait_for_condition,
)

from devcluster import LocalCluster
from devcluster.audit import audit_code, audit_user
from devcluster.testing import OperatorProcess, wait_until

DENIED = re.compile(r"forbidden|\b403\b[ :]|\(403\)|unauthorized", re.IGNORECASE)


def _rbac_objects(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] in RBAC_KINDS]


def _denials(proc: OperatorProcess) -> list[str]:
    return [line for line in proc.output().splitlines() if DENIED.search(line)]


def _user(namespace: str, account: str = "mpi-operator") -> str:
    return f"system:serviceaccount:{namespace}:{account}"


def _audit_denials(cluster: LocalCluster, start: int, user: str) -> list[str]:
    """The requests of ``user`` the API server answered 401 or 403 since ``start``."""
    return [
        f"{e.get('verb')} {e.get('requestURI')} -> {audit_code(e)}"
        for e in cluster.audit_events(start)
        if audit_user(e) == user and audit_code(e) in (401, 403)
    ]


def _audited(cluster: LocalCluster, start: int, user: str) -> int:
    return sum(1 for e in cluster.audit_events(start) if audit_user(e) == user)


@pytest.fixture
def cluster_wide_rbac(full_cluster: LocalCluster) -> Iterator[list[dict[str, Any]]]:
    """The single file's Namespace, ServiceAccount and RBAC, applied (not the CRD,
    which the cluster has, nor the Deployment: there is no image to run)."""
    objects = _rbac_objects(docs(DEPLOY))
    manifest = yaml.safe_dump_all(objects)
    full_cluster.kubectl("apply", "-f", "-", input=manifest)
    try:
        wait_until(
            lambda: (
                full_cluster.kubectl(
                    "get", "serviceaccount", "mpi-operator", "-n", "mpi-operator", check=False
                ).returncode
                == 0
            ),
            30,
            "ServiceAccount mpi-operator",
        )
        yield objects
    finally:
        _delete_cluster_scoped(full_cluster, objects)


def _assert_nothing_denied(
    cluster: LocalCluster, proc: OperatorProcess, audit_start: int, user: str
) -> None:
    """No authorization failure in the operator's log, and ``user`` made requests since
    ``audit_start`` of which the API server's audit log shows none answered 401/403."""
    assert _denials(proc) == []
    assert _audited(cluster, audit_start, user) > 0
    assert _audit_denials(cluster, audit_start, user) == []


def _delete_cluster_scoped(cluster: LocalCluster, objects: list[dict[str, Any]]) -> None:
    """Deletes the ClusterRoles and ClusterRoleBindings among ``objects``."""
    cluster_scoped = [o for o in objects if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    cluster.kubectl(
        "delete",
        "--ignore-not-found",
        "--wait=false",
        "-f",
        "-",
        input=yaml.safe_dump_all(cluster_scoped),
    )


def _run_pi_to_success(
    cluster: LocalCluster, namespace: str, proc: OperatorProcess
) -> dict[str, Any]:
    job = kwok_example(EXAMPLES / "pi" / "pi.yaml")
    apply(cluster, namespace, job)
    done = wait_for_condition(cluster, namespace, "pi", "Succeeded", proc)
    # cleanPodPolicy Running: the operator deleted the running workers.
    wait_until(
        lambda: (
            not [
                p
                for p in items(cluster, f"/api/v1/namespaces/{namespace}/pods")
                if "worker" in p["metadata"]["name"] and not p["metadata"].get("deletionTimestamp")
            ]
        ),
        30,
        "the workers to be deleted",
    )
    events = items(cluster, f"/api/v1/namespaces/{namespace}/events")
    assert any(e["involvedObject"].get("kind") == "MPIJob" for e in events)
    return done


def test_operator_runs_pi_under_its_cluster_role(
    full_cluster: LocalCluster, full_namespace: str, cluster_wide_rbac: Any, tmp_path: Path
) -> None:
    kubeconfig = service_account_kubeconfig(
        full_cluster, "mpi-operator", "mpi-operator", tmp_path / "sa.kubeconfig"
    )
    audit_start = full_cluster.audit_offset()
    # As the Deployment runs it: all namespaces, Lease in its own namespace.
    proc = start_operator(tmp_path, kubeconfig, "--lock-namespace=mpi-operator")
    try:
        _run_pi_to_success(full_cluster, full_namespace, proc)
        stop_operator(proc)
        _assert_nothing_denied(full_cluster, proc, audit_start, _user("mpi-operator"))
        lease = json.loads(
            full_cluster.kubectl(
                "get", "lease", "mpi-operator", "-n", "mpi-operator", "-o", "json"
            ).stdout
        )
        assert not lease["spec"].get("holderIdentity")
    finally:
        proc.kill()
        print(f"--- operator log ---\n{proc.output()[-6000:]}")


def test_operator_with_gang_scheduling_under_its_cluster_role(
    full_cluster: LocalCluster, full_namespace: str, cluster_wide_rbac: Any, tmp_path: Path
) -> None:
    """--gang-scheduling=volcano needs the podgroups and priorityclasses rules. No
    volcano runs here: the test binds the gang's pods itself (VolcanoStandIn)."""
    kubeconfig = service_account_kubeconfig(
        full_cluster, "mpi-operator", "mpi-operator", tmp_path / "sa.kubeconfig"
    )
    audit_start = full_cluster.audit_offset()
    proc = start_operator(
        tmp_path, kubeconfig, "--lock-namespace=mpi-operator", "--gang-scheduling=volcano"
    )
    try:
        ns = full_namespace
        job = kwok_example(EXAMPLES / "pi" / "pi-gang-volcano.yaml")
        apply(full_cluster, ns, job)
        volcano = VolcanoStandIn(full_cluster, ns)
        wait_for_condition(full_cluster, ns, "pi-gang", "Succeeded", proc, each_poll=volcano)
        assert len(volcano.bound) == 3
        assert list(volcano.groups) == ["pi-gang"]
        spec = volcano.groups["pi-gang"]["spec"]
        assert spec["minMember"] == 3 and spec["queue"] == "default"
        # Finished: the operator removed its PodGroup.
        podgroups = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"
        wait_until(lambda: not items(full_cluster, podgroups), 30, "the PodGroup's deletion")
        stop_operator(proc)
        _assert_nothing_denied(full_cluster, proc, audit_start, _user("mpi-operator"))
    finally:
        proc.kill()
        print(f"--- operator log ---\n{proc.output()[-6000:]}")


def test_operator_runs_pi_under_the_namespaced_role(
    full_cluster: LocalCluster, full_namespace: str, tmp_path: Path
) -> None:
    """The namespaced overlay's Role and ServiceAccount, moved into a test namespace
    by a kustomization on top of the overlay; the operator watches only there."""
    ns = full_namespace
    kustomization_dir = user_kustomization(
        tmp_path, namespace=ns, resources=[OVERLAYS / "namespaced"]
    )
    objects = [
        o
        for o in _rbac_objects(kustomize(full_cluster, kustomization_dir))
        if o["kind"] in ("ServiceAccount", "Role", "RoleBinding")
    ]
    assert {o["metadata"]["name"] for o in objects if o["kind"] == "Role"} == {
        "mpi-operator",
        "mpi-operator-leader-election",
    }
    full_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    kubeconfig = service_account_kubeconfig(
        full_cluster, ns, "mpi-operator", tmp_path / "sa.kubeconfig"
    )
    audit_start = full_cluster.audit_offset()
    proc = start_operator(tmp_path, kubeconfig, f"--namespace={ns}", f"--lock-namespace={ns}")
    try:
        _run_pi_to_success(full_cluster, ns, proc)
        stop_operator(proc)
        _assert_nothing_denied(full_cluster, proc, audit_start, _user(ns))
    finally:
        proc.kill()
        print(f"--- operator log ---\n{proc.output()[-6000:]}")


def test_namespaced_role_grants_nothing_elsewhere(
    full_cluster: LocalCluster, full_namespace: str, tmp_path: Path
) -> None:
    """Without rights outside its namespace, a cluster-wide start is refused clearly."""
    ns = full_namespace
    objects = [o for o in docs(ROOT / "manifests/rbac/namespaced/role.yaml")]
    objects.insert(
        0, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "mpi-operator"}}
    )
    for obj in objects:
        obj["metadata"]["namespace"] = ns
        for subject in obj.get("subjects") or []:
            subject["namespace"] = ns
    full_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    kubeconfig = service_account_kubeconfig(
        full_cluster, ns, "mpi-operator", tmp_path / "sa.kubeconfig"
    )
    proc = OperatorProcess(
        [f"--kubeConfig={kubeconfig}", f"--lock-namespace={ns}"],
        tmp_path / f"{uuid.uuid4().hex}.log",
    )
    proc.start()
    try:
        assert proc.wait(timeout=60) == 1
        assert "RBAC forbids listing" in proc.output()
    finally:
        proc.kill()


def test_t9k_crd_without_t9k_rbac_leaves_kubeflow_jobs_served(
    full_cluster: LocalCluster, full_namespace: str, cluster_wide_rbac: Any, tmp_path: Path
) -> None:
    """The shipped role does not cover T9k MPIJobs: installing their CRD must not
    crash-loop the operator; it says why it does not serve them and runs the rest."""
    t9k_crd = ROOT / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"
    name = "mpijobs.batch.tensorstack.dev"
    preinstalled = full_cluster.kubectl("get", "crd", name, check=False).returncode == 0
    full_cluster.kubectl("apply", "-f", str(t9k_crd))
    full_cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    kubeconfig = service_account_kubeconfig(
        full_cluster, "mpi-operator", "mpi-operator", tmp_path / "sa.kubeconfig"
    )
    proc = start_operator(tmp_path, kubeconfig, "--lock-namespace=mpi-operator")
    try:
        _run_pi_to_success(full_cluster, full_namespace, proc)
        assert "RBAC forbids listing its MPIJobs; not serving them" in proc.output()
        stop_operator(proc)
    finally:
        proc.kill()
        if not preinstalled:
            _remove_t9k_crd(full_cluster)


def _remove_t9k_crd(cluster: LocalCluster) -> None:
    cluster.kubectl("delete", "crd", T9K_CRD_NAME, "--ignore-not-found", "--wait=true")
    # kubectl caches discovery; a bare `kubectl get mpijob` elsewhere must
    # mean the Kubeflow kind again.
    wait_until(
        lambda: (
            not cluster.kubectl(
                "api-resources", "--api-group=batch.tensorstack.dev", "-o", "name"
            ).stdout.strip()
        ),
        30,
        "kubectl discovery without batch.tensorstack.dev",
    )


def _t9k_job_names(cluster: LocalCluster, namespace: str, resource: str) -> set[str]:
    out = cluster.kubectl("get", resource, "-n", namespace, "-o", "json").stdout
    return {
        f"{o['apiVersion'].split('/')[0]}/{o['metadata']['name']}" for o in json.loads(out)["items"]
    }


def test_operator_serves_t9k_jobs_under_the_t9k_component(
    full_cluster: LocalCluster, full_namespace: str, tmp_path: Path
) -> None:
    """The t9k overlay's CRD and RBAC, applied: the operator, under its ServiceAccount,
    serves T9k MPIJobs (the pi example to Succeeded) with no denial in the audit log,
    and `kubectl get tmj` / `mpij` name each kind without ambiguity."""
    ns = full_namespace
    preinstalled = full_cluster.kubectl("get", "crd", T9K_CRD_NAME, check=False).returncode == 0
    objects = kustomize(full_cluster, OVERLAYS / "t9k")
    installed = [
        o
        for o in objects
        if o["kind"] in RBAC_KINDS
        or (o["kind"] == "CustomResourceDefinition" and o["metadata"]["name"] == T9K_CRD_NAME)
    ]
    full_cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(installed))
    full_cluster.kubectl(
        "wait", "--for=condition=Established", f"crd/{T9K_CRD_NAME}", "--timeout=60s"
    )
    proc: OperatorProcess | None = None
    try:
        kubeconfig = service_account_kubeconfig(
            full_cluster, "mpi-operator", "mpi-operator", tmp_path / "sa.kubeconfig"
        )
        audit_start = full_cluster.audit_offset()
        proc = start_operator(tmp_path, kubeconfig, "--lock-namespace=mpi-operator")
        full_cluster.kubectl("apply", "-n", ns, "-f", str(ROOT / "examples/t9k/pi.yaml"))
        apply(full_cluster, ns, kwok_example(EXAMPLES / "pi" / "pi.yaml"))

        def phase() -> str:
            out = full_cluster.kubectl(
                "get", T9K_CRD_NAME, "pi-t9k", "-n", ns, "-o", "jsonpath={.status.phase}"
            ).stdout
            return out.strip()

        wait_until(lambda: phase() == "Running", 90, "pi-t9k Running")
        full_cluster.kubectl(
            "annotate",
            "pod",
            "pi-t9k-launcher",
            "-n",
            ns,
            "kwok.mpi-operator.io/complete-after=1s",
            "kwok.mpi-operator.io/exit-code=0",
        )
        wait_until(lambda: phase() == "Succeeded", 90, "pi-t9k Succeeded")
        wait_for_condition(full_cluster, ns, "pi", "Succeeded", proc)
        assert "serving T9k MPIJobs" in proc.output()
        # Each kind by its own short name; the full names as docs/user-guide/t9k.md gives them.
        assert _t9k_job_names(full_cluster, ns, "tmj") == {"batch.tensorstack.dev/pi-t9k"}
        assert _t9k_job_names(full_cluster, ns, "mpij") == {"kubeflow.org/pi"}
        assert _t9k_job_names(full_cluster, ns, T9K_CRD_NAME) == {"batch.tensorstack.dev/pi-t9k"}
        assert _t9k_job_names(full_cluster, ns, "mpijobs.kubeflow.org") == {"kubeflow.org/pi"}
        # The CRD's field descriptions, as docs/user-guide/fields.md shows them.
        explain = full_cluster.kubectl(
            "explain", "--api-version=batch.tensorstack.dev/v1beta1", "mpijobs.spec.worker"
        ).stdout
        assert "The workers and the MPI command. Required." in explain
        assert "Number of worker pods, 1 to 100000. Defaults to 1." in explain
        stop_operator(proc)
        _assert_nothing_denied(full_cluster, proc, audit_start, _user("mpi-operator"))
    finally:
        if proc is not None:
            proc.kill()
            print(f"--- operator log ---\n{proc.output()[-6000:]}")
        full_cluster.kubectl(
            "delete", T9K_CRD_NAME, "--all", "-n", ns, "--ignore-not-found", "--wait=true"
        )
        _delete_cluster_scoped(full_cluster, installed)
        if not preinstalled:
            _remove_t9k_crd(full_cluster)
