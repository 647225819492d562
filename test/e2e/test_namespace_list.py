"""``--namespace a,b``: the operator watches exactly the listed namespaces, with Roles
only there (no ClusterRole), and never lists or watches anything cluster-wide.

On the full cluster (which audits every ServiceAccount), the real ``mpi-operator``
process runs under a ServiceAccount token whose only rights are the namespaced
overlay's Role, bound in namespaces a and b, and the leader-election Role in its own
namespace. The pi example runs to Succeeded in a and b; the same MPIJob in a third
namespace c gets no status and no children. The audit log shows every LIST and WATCH
of the operator inside a or b, and no request of it denied.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from examples_support import (
    EXAMPLES,
    ROOT,
    apply,
    docs,
    get,
    items,
    kwok_example,
    service_account_kubeconfig,
    start_operator,
    stop_operator,
    wait_for_condition,
)

from devcluster import LocalCluster
from devcluster.audit import audit_code
from devcluster.testing import wait_until

Obj = dict[str, Any]
ROLE = ROOT / "manifests" / "rbac" / "namespaced" / "role.yaml"
LEADER_ELECTION = ROOT / "manifests" / "base" / "leader-election-role.yaml"
WATCHED = {"mpijobs", "pods", "jobs", "services", "configmaps", "secrets"}
CHILDREN = (
    "/api/v1/namespaces/{ns}/pods",
    "/api/v1/namespaces/{ns}/services",
    "/api/v1/namespaces/{ns}/configmaps",
    "/api/v1/namespaces/{ns}/secrets",
    "/apis/batch/v1/namespaces/{ns}/jobs",
)


def _in_namespace(path: Path, namespace: str, account_namespace: str) -> list[Obj]:
    """The Role and RoleBinding of ``path`` moved to ``namespace``, bound to the
    ServiceAccount mpi-operator of ``account_namespace``."""
    out = []
    for obj in docs(path):
        obj = copy.deepcopy(obj)
        obj["metadata"]["namespace"] = namespace
        for subject in obj.get("subjects") or []:
            subject["namespace"] = account_namespace
        out.append(obj)
    return out


def test_operator_watches_only_the_listed_namespaces(
    full_cluster: LocalCluster, tmp_path: Path
) -> None:
    cluster = full_cluster
    home, a, b, c = (cluster.create_namespace(p) for p in ("ops", "team-a", "team-b", "team-c"))
    try:
        account = {"apiVersion": "v1", "kind": "ServiceAccount"}
        objects: list[Obj] = [{**account, "metadata": {"name": "mpi-operator", "namespace": home}}]
        objects += _in_namespace(LEADER_ELECTION, home, home)
        objects += _in_namespace(ROLE, a, home) + _in_namespace(ROLE, b, home)
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
        kubeconfig = service_account_kubeconfig(
            cluster, home, "mpi-operator", tmp_path / "sa.kubeconfig"
        )
        user = f"system:serviceaccount:{home}:mpi-operator"
        audit_start = cluster.audit_offset()
        proc = start_operator(
            tmp_path, kubeconfig, f"--namespace={a},{b}", f"--lock-namespace={home}"
        )
        try:
            for ns in (a, b, c):
                apply(cluster, ns, kwok_example(EXAMPLES / "pi" / "pi.yaml"))
            for ns in (a, b):
                wait_for_condition(cluster, ns, "pi", "Succeeded", proc)
            # By now the operator had every chance to touch c: it did not.
            job = get(cluster, f"/apis/kubeflow.org/v2beta1/namespaces/{c}/mpijobs/pi")
            assert job is not None and not job.get("status"), job
            children = [
                o["metadata"]["name"]
                for path in CHILDREN
                for o in items(cluster, path.format(ns=c))
                if o["metadata"].get("ownerReferences")
            ]
            assert children == []
            stop_operator(proc)
        finally:
            proc.kill()
            print(f"--- operator log ---\n{proc.output()[-6000:]}")

        # The watches are audited when they end (the operator stopped).
        reads: list[Obj] = []

        def every_watch_audited() -> bool:
            reads[:] = [
                e
                for e in cluster.audit_events(audit_start, user=user)
                if e.get("verb") in ("list", "watch")
            ]
            seen = {
                (e["verb"], e["objectRef"]["resource"], e["objectRef"].get("namespace"))
                for e in reads
            }
            return all(
                (verb, resource, ns) in seen
                for verb in ("list", "watch")
                for resource in WATCHED
                for ns in (a, b)
            )

        wait_until(every_watch_audited, 30, "each informer's list and watch in a and b audited")
        cluster_wide = [
            f"{e['verb']} {e['requestURI']}" for e in reads if "/namespaces/" not in e["requestURI"]
        ]
        assert cluster_wide == []
        elsewhere = sorted(
            {e["requestURI"] for e in reads if e["objectRef"].get("namespace") not in (a, b)}
        )
        assert elsewhere == []
        denied = [
            f"{e.get('verb')} {e.get('requestURI')} -> {audit_code(e)}"
            for e in cluster.audit_events(audit_start, user=user)
            if audit_code(e) in (401, 403)
        ]
        assert denied == []
    finally:
        for ns in (a, b, c, home):
            cluster.delete_namespace(ns)
