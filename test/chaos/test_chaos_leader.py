"""Two replicas with leader election: the leader SIGKILLed, the follower takes over.

"At no moment do both write" is checked through the processes' own metrics, sampled
every 100 ms for the whole run: a process only runs its sync workers (the only code
that writes MPIJobs, pods, Jobs, Services, ConfigMaps, Secrets and events) while it
leads, and ``mpi_operator_reconcile_duration_seconds_count`` counts every sync. So:

* the follower's sync count is 0 in every sample taken before it led;
* no sample shows both processes with ``mpi_operator_is_leader 1``;
* the old leader is dead (SIGKILL, reaped) before the follower's first sync;
* the Lease changed hands exactly once, to the follower's identity.

And on the API server's side: each replica runs as its own ServiceAccount, and in
kube-apiserver's audit log every write of the first replica (creates, updates,
patches, deletes; the Lease aside) was answered before the second replica's first
write was received.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from chaos_support import (
    LEASE_DURATION,
    Obj,
    Operators,
    api,
    create_mpijob,
    delete_all_and_check_no_orphans,
    report,
    scale,
    wait_final,
    wait_leading,
)

from devcluster import LocalCluster
from devcluster.audit import audit_user
from devcluster.sample_jobs import pi_mpijob
from devcluster.testing import OperatorProcess, wait_until

RETRY_PERIOD = 0.5


@dataclass(frozen=True)
class Sample:
    at: float
    proc: int
    leader: bool
    syncs: float


def _syncs(metrics: str) -> float:
    return sum(
        float(m.group(1))
        for m in re.finditer(
            r"^mpi_operator_reconcile_duration_seconds_count\{[^}]*\} (\S+)$", metrics, re.M
        )
    )


class Sampler(threading.Thread):
    def __init__(self, procs: list[OperatorProcess]) -> None:
        super().__init__(daemon=True)
        self.procs = procs
        self.samples: list[Sample] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.1):
            for i, proc in enumerate(self.procs):
                if proc.poll() is not None:
                    continue
                try:
                    text = proc.metrics()
                except (OSError, RuntimeError):
                    continue
                leader = "mpi_operator_is_leader 1.0" in text
                self.samples.append(Sample(time.monotonic(), i, leader, _syncs(text)))


def _lease(cluster: LocalCluster, ns: str) -> Obj:
    lease: Obj = api(
        cluster, "GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/mpi-operator"
    )
    return lease


WRITES = {"create", "update", "patch", "delete", "deletecollection"}
NOT_WORK = {"leases", "selfsubjectaccessreviews"}


def _writes(events: list[Obj], user: str) -> list[tuple[datetime, datetime]]:
    """(received, answered) of each write of ``user`` but its Lease's and access reviews."""
    return [
        (
            datetime.fromisoformat(e["requestReceivedTimestamp"]),
            datetime.fromisoformat(e["stageTimestamp"]),
        )
        for e in events
        if audit_user(e) == user
        and e.get("verb") in WRITES
        and (e.get("objectRef") or {}).get("resource") not in NOT_WORK
    ]


def _replica_identity(cluster: LocalCluster, ns: str, name: str, tmp: Path) -> tuple[Path, str]:
    """A cluster-admin ServiceAccount for one replica: its kubeconfig and audit user."""
    cluster.cluster_admin_service_account(ns, name)
    kubeconfig = cluster.token_kubeconfig(ns, name, tmp / f"{name}.kubeconfig")
    return kubeconfig, f"system:serviceaccount:{ns}:{name}"


def test_chaos_follower_takes_over_within_the_lease_and_never_writes_alongside(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators, tmp_path: Path
) -> None:
    ns = full_namespace
    config_a, user_a = _replica_identity(full_cluster, ns, "replica-a", tmp_path)
    config_b, user_b = _replica_identity(full_cluster, ns, "replica-b", tmp_path)
    audit_start = full_cluster.audit_offset()
    first = operators.start(ns, kubeconfig=config_a)
    wait_leading(first)
    second = operators.start(ns, kubeconfig=config_b)
    wait_until(lambda: second.metrics(), 60, "the follower's metrics")
    sampler = Sampler([first, second])
    sampler.start()
    try:
        jobs = scale(4, 12)
        expected = {}
        for i in range(jobs):
            name = f"ha-{i}"
            expected[name] = "Succeeded"
            create_mpijob(full_cluster, ns, pi_mpijob(name, complete_after=f"{6 + i}s"))
        wait_until(lambda: _syncs(first.metrics()) > 0, 60, "the leader to sync")
        transitions = _lease(full_cluster, ns)["spec"].get("leaseTransitions", 0)

        killed = time.monotonic()
        first.signal(signal.SIGKILL)
        first.wait(10)
        wait_leading(second, timeout=LEASE_DURATION * 4)
        failover = time.monotonic() - killed

        wait_final(full_cluster, ns, expected, timeout=120)
    finally:
        sampler.stop.set()
        sampler.join(5)

    lease = _lease(full_cluster, ns)
    audit = full_cluster.audit_events(audit_start)
    writes_a, writes_b = _writes(audit, user_a), _writes(audit, user_b)
    both = [
        (a, b)
        for a in sampler.samples
        for b in sampler.samples
        if a.proc == 0 and b.proc == 1 and a.leader and b.leader and abs(a.at - b.at) < 0.1
    ]
    second_samples = [s for s in sampler.samples if s.proc == 1]
    synced_while_following = [s for s in second_samples if not s.leader and s.syncs > 0]
    first_sync_of_second = min((s.at for s in second_samples if s.syncs > 0), default=None)
    report(
        test="leader-failover",
        jobs=jobs,
        sigkills=1,
        failover_s=round(failover, 2),
        lease_duration_s=LEASE_DURATION,
        samples=len(sampler.samples),
        both_leading_samples=len(both),
        follower_syncs_before_leading=len(synced_while_following),
        lease_transitions=lease["spec"].get("leaseTransitions", 0) - transitions,
        audited_writes_first=len(writes_a),
        audited_writes_second=len(writes_b),
    )
    assert writes_a and writes_b, (len(writes_a), len(writes_b))
    last_answered_a = max(answered for _, answered in writes_a)
    first_received_b = min(received for received, _ in writes_b)
    assert last_answered_a < first_received_b, (last_answered_a, first_received_b)
    assert failover <= LEASE_DURATION + 2 * RETRY_PERIOD + 2, failover
    assert not both
    assert not synced_while_following, synced_while_following
    assert first_sync_of_second is not None and first_sync_of_second >= killed
    assert lease["spec"]["holderIdentity"] == second.identity()
    assert lease["spec"].get("leaseTransitions", 0) == transitions + 1
    operators.collect_secrets()
    delete_all_and_check_no_orphans(full_cluster, ns)
