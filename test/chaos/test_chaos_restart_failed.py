"""RestartFailed against RestartJob on KWOK, 1,000 workers each, at the same client QPS.

One worker of a running job fails. RestartJob deletes every worker pod and the launcher
and creates them all again; RestartFailed replaces only the failed worker and the
launcher. The test measures, for each, the operator's API writes (from kube-apiserver's
audit log, Lease renewals left out), the time from the failure to the new attempt's
launcher Job, and each step of the restart (watch events, timeline.py). It asserts that
RestartFailed takes at most a few dozen writes and under half of RestartJob's time,
that the operator's own steps are quick (its decision within 2 s of the failure, the
1 s batch included; its deletes within 0.9 s of the decision; the steps that wait on a
child, the failed worker gone, the old launcher Job gone and every worker Ready, within
0.9 s of the watch showing them, not after the 1 s child-event batch), and that the
other workers' pods (their uids) are kept.
A second test measures the ceiling: the same API actions done by a bare script with no
operator and no reaction time (restart_ceiling.py).

Measured at the operator's default 100 QPS (2026-11-28, two runs):

* RestartJob: 1,077 and 1,473 writes, 9.75 and 12.44 s (9.9 s before the change below).
* RestartFailed: 10 and 11 writes, 0.61 and 0.84 s; before, 12 writes and 2.55 s, two
  seconds of which were the child-event batch at the steps that wait on a child (the
  old launcher Job gone, the new worker Ready). Its steps in the first run: the restart
  written 0.39 s after the failure, the deletes sent 0.01 s later, the failed worker
  gone at once, the old launcher Job gone 0.05 s after its delete, the replacement
  created 0.02 s later and Ready in 0.03 s, the new launcher Job 0.06 s later, its pod
  running 0.04 s after.
* The ceiling (six runs): the new launcher Job 0.07 to 0.13 s after t=0 in four, 0.86 s
  in one (the garbage collector's foreground deletion of the old Job took 0.84 s) and
  1.97 s in one (KWOK, unpatched then, deleted the new pod twice, see below); the
  worker's delete, create and Ready take 0.04 to 0.09 s.

What the operator adds to the ceiling is the wait from the failure to its decision:
pod changes are batched (up to 1 s, as the Job controller batches them), so that
failures that come together (a worker's OOM, mpirun's exit a moment later) are judged
together; that batch is kept. A tenth of RestartJob's time was reached in both runs
(1/16, 1/15) but is not asserted: the batch's share (0 to 1 s, as other events are
queued) and the foreground deletion's (up to 0.9 s) make the worst case about 2 s, a
fifth of it. A third is asserted, and 0.9 s for the operator's reaction at each step
that waits on a child (1 s, the batch, before).

Under two CPU burners (ten runs, December 2026) the ratio was 0.10 to 0.16 in nine
and 0.38 in one, where KWOK itself was 3 s late (the old launcher pod gone and the
new worker Ready 3.2 s after the operator's deletes and create; the operator's
reactions stayed under 0.14 s). KWOK's lag adds to RestartFailed's seconds and hardly
to RestartJob's, whose ten seconds are its 1,000 creates at 100 QPS. So the ratio's
bound is a half, with room for KWOK's lag; what the operator itself takes is bounded
step by step: its decision took 1.05 to 1.21 s (the batch), its deletes 0.03 to
0.14 s after it, its reactions 0.05 to 0.23 s.

KWOK v0.8.0 deletes a pod by name, not uid. When it lags (a loaded machine), its late
deletes of the failed worker killed the replacement made under the same name, which
the operator (and the bare script) then made again. That cost 4 to 6 s and failed
this test beside another suite (RestartFailed 4.4 s against RestartJob's 11.7 s in CI,
with two test workers). A kubelet deletes with the pod's uid as a precondition, and so
does our KWOK now (hack/tools/kwok/delete-by-uid.patch): a late delete is refused.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from chaos_support import Operators, api, create_mpijob, list_items, report, scale, wait_leading
from restart_ceiling import measure_ceiling
from timeline import Timeline, restart_steps

from devcluster import LocalCluster
from devcluster.components import fake_node
from devcluster.sample_jobs import pi_mpijob
from devcluster.testing import wait_until

Obj = dict[str, Any]
WORKERS = scale(1_000, 1_000)
QPS = 100
ACCOUNT = "restarter"
WRITES = {"create", "update", "patch", "delete", "deletecollection"}
ATTEMPT = "training.kubeflow.org/restart-attempt"
FAILED = {
    "phase": "Failed",
    "containerStatuses": [
        {
            "name": "worker",
            "image": "x",
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "state": {"terminated": {"exitCode": 1, "reason": "Error"}},
        }
    ],
}


def _workers(cluster: LocalCluster, ns: str, job: str) -> dict[str, str]:
    selector = f"training.kubeflow.org/job-name={job},training.kubeflow.org/job-role=worker"
    pods = list_items(cluster, f"/api/v1/namespaces/{ns}/pods", selector)
    return {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
    }


def _running(cluster: LocalCluster, ns: str, job: str) -> bool:
    obj = api(cluster, "GET", f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/{job}")
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Running" and c["status"] == "True" for c in conditions)


def _new_launcher(cluster: LocalCluster, ns: str, job: str) -> bool:
    status, launcher = cluster.request("GET", f"/apis/batch/v1/namespaces/{ns}/jobs/{job}-launcher")
    return status == 200 and (launcher["metadata"].get("labels") or {}).get(ATTEMPT) == "1"


def _restart(cluster: LocalCluster, ns: str, job: str, action: str, user: str) -> Obj:
    """Runs a job to Running, fails one worker, and measures the restart."""
    policy = {"maxRestarts": 1, "rules": [{"name": "any", "action": action}]}
    obj = pi_mpijob(job, workers=WORKERS, launcher_exit=None)
    obj["spec"]["runPolicy"] = {**obj["spec"].get("runPolicy", {}), "failurePolicy": policy}
    create_mpijob(cluster, ns, obj)
    wait_until(lambda: _running(cluster, ns, job), 300, f"{job} Running", 0.5)
    before = _workers(cluster, ns, job)
    assert len(before) == WORKERS
    audit_start = cluster.audit_offset()
    failed_at = datetime.now().astimezone()
    paths = [
        f"/api/v1/namespaces/{ns}/pods",
        f"/apis/batch/v1/namespaces/{ns}/jobs",
        f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs",
    ]
    with Timeline(cluster, paths, partial(_followed, job)) as timeline:
        started = time.monotonic()
        api(
            cluster,
            "PATCH",
            f"/api/v1/namespaces/{ns}/pods/{job}-worker-0/status",
            {"status": FAILED},
            content_type="application/merge-patch+json",
        )
        wait_until(lambda: _new_launcher(cluster, ns, job), 600, f"{job}'s new launcher", 0.1)
        seconds = time.monotonic() - started
        running = partial(_launcher_pod_running, timeline, started)
        wait_until(running, 60, f"{job}'s new launcher pod Running", 0.1)
        steps = restart_steps(timeline, started, job, before[f"{job}-worker-0"])
    events = [
        e
        for e in cluster.audit_events(audit_start, user=user)
        if e.get("verb") in WRITES
        and (e.get("objectRef") or {}).get("resource") != "leases"
        and datetime.fromisoformat(e["requestReceivedTimestamp"]) >= failed_at
    ]
    after = _workers(cluster, ns, job)
    kept = sum(1 for name, uid in before.items() if after.get(name) == uid)
    api(cluster, "DELETE", f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/{job}")
    return {"seconds": seconds, "writes": len(events), "kept": kept, "steps": steps}


def _followed(job: str, obj: Obj) -> bool:
    name = str(obj["metadata"].get("name") or "")
    return name in (job, f"{job}-worker-0") or name.startswith(f"{job}-launcher")


def _launcher_pod_running(timeline: Timeline, since: float) -> bool:
    def running(kind: str, obj: Obj) -> bool:
        labels = obj["metadata"].get("labels") or {}
        return (
            obj.get("kind") == "Pod"
            and labels.get(ATTEMPT) == "1"
            and "launcher" in str(obj["metadata"].get("name"))
            and (obj.get("status") or {}).get("phase") == "Running"
        )

    return timeline.first(since, running) is not None


@pytest.fixture
def room(full_cluster: LocalCluster, full_namespace: str) -> Iterator[None]:
    """Fake nodes of the test's own: the cluster's four take 250 pods each."""
    names = [f"{full_namespace}-{i}"[:63] for i in range(4)]
    for name in names:
        full_cluster.ensure(fake_node(name))
    try:
        yield
    finally:
        for name in names:
            full_cluster.request("DELETE", f"/api/v1/nodes/{name}")


def test_chaos_restart_failed_replaces_one_worker_of_a_thousand_for_a_few_writes(
    full_cluster: LocalCluster,
    full_namespace: str,
    operators: Operators,
    tmp_path: Path,
    room: None,
) -> None:
    ns = full_namespace
    full_cluster.cluster_admin_service_account(ns, ACCOUNT)
    kubeconfig = full_cluster.token_kubeconfig(ns, ACCOUNT, tmp_path / "restarter.kubeconfig")
    user = f"system:serviceaccount:{ns}:{ACCOUNT}"
    proc = operators.start(ns, kubeconfig=kubeconfig, qps=QPS, burst=2 * QPS)
    wait_leading(proc)
    whole = _restart(full_cluster, ns, "whole", "RestartJob", user)
    failed = _restart(full_cluster, ns, "failed", "RestartFailed", user)
    report(
        restart_job_seconds=round(whole["seconds"], 2),
        restart_job_writes=whole["writes"],
        restart_failed_seconds=round(failed["seconds"], 2),
        restart_failed_writes=failed["writes"],
        workers=WORKERS,
        qps=QPS,
    )
    print("CHAOS restart_job_steps", whole["steps"])
    print("CHAOS restart_failed_steps", failed["steps"])
    assert whole["kept"] == 0, whole
    assert failed["kept"] == WORKERS - 1, failed
    assert failed["writes"] <= 40, failed
    assert failed["seconds"] < whole["seconds"] / 2, (whole, failed)
    steps = failed["steps"]
    # The operator's decision: the 1 s batch, then one status write.
    assert steps["restarting_written"] - steps["failed_seen"] < 2.0, steps
    # Its deletes, once the decision is written.
    deletes = max(steps["worker_delete_sent"], steps["launcher_delete_sent"])
    assert deletes - steps["restarting_written"] < 0.9, steps
    # Its reaction at each step that waits on a child: 1 s (the batch) before, a few
    # hundredths now.
    assert steps["worker_created"] - steps["old_worker_gone"] < 0.9, steps
    waited = max(steps["old_launcher_job_gone"], steps["worker_ready"])
    assert steps["launcher_created"] - waited < 0.9, steps


def test_chaos_restart_ceiling_of_a_bare_script(
    full_cluster: LocalCluster, full_namespace: str, room: None
) -> None:
    """The least any operator can take (see restart_ceiling.py): reported, and sane."""
    for run in range(3):
        steps = measure_ceiling(full_cluster, full_namespace, QPS, FAILED, run)
        print("CHAOS restart_ceiling_steps", steps)
        assert steps["launcher_created"] < 30, steps
