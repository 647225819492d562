"""The benchmark's control plane: the full local cluster plus an audit log of the operators.

Both operators authenticate as one ServiceAccount (``mpi-operator/operator``, bound
to ``cluster-admin``) through a token kubeconfig; kube-apiserver writes an audit
event (level Metadata, stage ResponseComplete) for every request of that user and
of nobody else, so the API cost of an operator is the audit events written while it
alone was running, split by verb, resource and user agent. Everything else (the
harness, kube-controller-manager, kube-scheduler, KWOK) is not audited.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from devcluster import FULL, LocalCluster
from devcluster.audit import audit_code, audit_user, read_audit_events

from .machine import write_latency_ms
from .names import STATUS_CONFIG_UPDATES

LOCK_NAMESPACE = "mpi-operator"
OPERATOR_SA = "operator"
OPERATOR_USER = f"system:serviceaccount:{LOCK_NAMESPACE}:{OPERATOR_SA}"
LEASE_NAME = "mpi-operator"


class BenchCluster(LocalCluster):
    """A :class:`LocalCluster` (shape ``full``) whose API server audits the operators."""

    audit_log: Path

    def __init__(self, workdir: Path, nodes: int = 8) -> None:
        super().__init__(workdir, FULL, nodes=nodes, audit_users=[OPERATOR_USER])
        assert self.audit_log is not None
        self.operator_kubeconfig = self.workdir / "operator.kubeconfig"

    def start(self) -> None:
        super().start()
        self._setup_operator_identity()

    def _setup_operator_identity(self) -> None:
        self.cluster_admin_service_account(LOCK_NAMESPACE, OPERATOR_SA)
        self.token_kubeconfig(LOCK_NAMESPACE, OPERATOR_SA, self.operator_kubeconfig, "48h")

    def delete_lease(self) -> None:
        """Drop the operators' leader-election lease (the reference never releases it)."""
        self.request(
            "DELETE",
            f"/apis/coordination.k8s.io/v1/namespaces/{LOCK_NAMESPACE}/leases/{LEASE_NAME}",
        )


def audit_counts(path: Path, start: int, end: int | None = None) -> dict[str, Any]:
    """Requests of the operator user logged between two offsets of the audit log.

    Returns ``{"total": n, "by_verb_resource": {"create pods": n, ...},
    "by_user_agent": {...}, "failed_by_verb_resource_code": {"create pods 409": n},
    "write_latency_ms": {"p50": ms, "p90": ms, "n": n}, "updates_by_object":
    {"update mpijobs/status fanout": n, "update configmaps fanout-config": n, ...}}``
    (the status and hostfile writes of each MPIJob); subresources are spelled
    ``pods/status``.
    """
    by_vr: Counter[str] = Counter()
    by_object: Counter[str] = Counter()
    by_ua: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    mine = [ev for ev in read_audit_events(path, start, end) if audit_user(ev) == OPERATOR_USER]
    for ev in mine:
        ref = ev.get("objectRef") or {}
        resource = ref.get("resource") or ev.get("requestURI", "?").split("?")[0]
        if ref.get("subresource"):
            resource += "/" + ref["subresource"]
        key = f"{ev.get('verb', '?')} {resource}"
        by_vr[key] += 1
        if key in STATUS_CONFIG_UPDATES:
            by_object[f"{key} {ref.get('name', '?')}"] += 1
        code = audit_code(ev)
        if code >= 400:
            failed[f"{key} {code}"] += 1
        ua = str(ev.get("userAgent", "?"))
        by_ua[_short_agent(ua)] += 1
    return {
        "total": sum(by_vr.values()),
        "by_verb_resource": dict(by_vr.most_common()),
        "by_user_agent": dict(by_ua.most_common()),
        "failed_by_verb_resource_code": dict(failed.most_common()),
        "write_latency_ms": write_latency_ms(mine),
        "updates_by_object": dict(by_object.most_common()),
    }


def _short_agent(ua: str) -> str:
    # client-go: "mpi-operator/v0.0.0 (linux/amd64) kubernetes/$Format/leader-election"
    if "kubernetes/" in ua and ua.count("/") >= 4:
        return ua.split(" ")[0].split("/")[0] + " …/" + ua.rsplit("/", 1)[-1]
    return ua
