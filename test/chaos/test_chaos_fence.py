"""A leader whose Lease updates are denied makes no other write after its renew deadline.

The operator runs as a ServiceAccount (audited by the full cluster) with every right
it needs from a ClusterRole, and the Lease rights from a Role in the lock namespace.
While three MPIJobs fan out (a low client QPS keeps worker creates queued for many
seconds), the Role loses ``update``/``create`` of Leases: the leader's renewals are
refused with 403 and it steps down. The audit log must show no write of it but the
Lease's received later than its renew deadline after its last successful renewal
(give or take the send-to-receipt latency), although its sync workers drain for 4 s
after stepping down and had writes queued.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

from chaos_support import Obj, Operators, api, create_mpijob, list_items, report, wait_leading

from devcluster import LocalCluster
from devcluster.audit import audit_code
from devcluster.sample_jobs import pi_mpijob
from devcluster.testing import wait_until

RENEW_DEADLINE = 5.0
ELECTION = (
    "--lease-duration=15",
    f"--renew-deadline={RENEW_DEADLINE:g}",
    "--retry-period=1",
    "--shutdown-drain-seconds=4",
)
#: Between the operator sending a write and kube-apiserver stamping its receipt.
LATENCY = 1.0
WRITES = {"create", "update", "patch", "delete", "deletecollection"}
LEASE_RULE: Obj = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"]}
GROUPS = ["", "batch", "kubeflow.org", "events.k8s.io", "scheduling.k8s.io"]
GROUPS += ["scheduling.volcano.sh", "scheduling.x-k8s.io", "apiextensions.k8s.io"]
GROUPS += ["batch.tensorstack.dev", "scheduler.tensorstack.dev", "authorization.k8s.io"]


def _rbac(ns: str, account: str) -> list[Obj]:
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": ns}]
    all_verbs = [{"apiGroups": GROUPS, "resources": ["*"], "verbs": ["*"]}]
    lease_rule = [{**LEASE_RULE, "verbs": ["*"]}]
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}},
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": ns}, "rules": all_verbs},
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ns},
            "subjects": subject,
        },
        {"apiVersion": rbac, "kind": "Role", "metadata": {"name": "lease"}, "rules": lease_rule},
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": {"name": "lease"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lease"},
            "subjects": subject,
        },
    ]


def _received(event: Obj) -> datetime:
    return datetime.fromisoformat(event["requestReceivedTimestamp"])


def test_chaos_a_leader_that_cannot_renew_stops_writing_at_its_renew_deadline(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators, tmp_path: Path
) -> None:
    ns, account = full_namespace, "fenced"
    user = f"system:serviceaccount:{ns}:{account}"
    for obj in _rbac(ns, account):
        full_cluster.kubectl("-n", ns, "apply", "-f", "-", input=json.dumps(obj))
    kubeconfig = full_cluster.token_kubeconfig(ns, account, tmp_path / "fenced.kubeconfig")
    audit_start = full_cluster.audit_offset()
    proc = operators.start(ns, kubeconfig=kubeconfig, qps=5, burst=5, lease=ELECTION)
    try:
        wait_leading(proc)
        for i in range(3):
            create_mpijob(
                full_cluster, ns, pi_mpijob(f"fanout-{i}", workers=20, launcher_exit=None)
            )
        pods = f"/api/v1/namespaces/{ns}/pods"
        wait_until(lambda: len(list_items(full_cluster, pods)) >= 5, 60, "worker creates under way")
        api(
            full_cluster,
            "PATCH",
            f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/lease",
            {"rules": [{**LEASE_RULE, "verbs": ["get", "list", "watch"]}]},
            content_type="application/merge-patch+json",
        )
        denied_at = datetime.now().astimezone()
        assert proc.wait(timeout=60) == 1, "a leader that lost its Lease exits 1"
    finally:
        api(full_cluster, "DELETE", f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs")

    events = full_cluster.audit_events(audit_start, user=user)
    leases = [e for e in events if (e.get("objectRef") or {}).get("resource") == "leases"]
    renewals = [e for e in leases if e.get("verb") == "update" and audit_code(e) == 200]
    refused = [e for e in leases if e.get("verb") == "update" and audit_code(e) == 403]
    writes = [
        e
        for e in events
        if e.get("verb") in WRITES
        and (e.get("objectRef") or {}).get("resource") not in ("leases", "selfsubjectaccessreviews")
    ]
    assert renewals and refused, (len(renewals), len(refused))
    last_renewal = max(_received(e) for e in renewals)
    fence = last_renewal + timedelta(seconds=RENEW_DEADLINE)
    late = [e for e in writes if _received(e) > fence + timedelta(seconds=LATENCY)]
    last_write = max(_received(e) for e in writes)
    report(
        test="leadership-fence",
        writes=len(writes),
        refused_renewals=len(refused),
        denied_after_last_renewal_s=round((denied_at - last_renewal).total_seconds(), 2),
        last_write_after_last_renewal_s=round((last_write - last_renewal).total_seconds(), 2),
        late_writes=len(late),
    )
    in_flight = [e for e in writes if last_renewal < _received(e) <= fence]
    assert in_flight, "no write between the last renewal and the renew deadline: nothing queued"
    assert not late, [
        f"{e['requestReceivedTimestamp']} {e['verb']} {e.get('requestURI')}" for e in late[:10]
    ]
