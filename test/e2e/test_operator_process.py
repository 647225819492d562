"""End to end: the real ``mpi-operator`` process on the full local cluster (scheduler,
Job controller, KWOK nodes) runs an MPIJob created with kubectl to success."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from devcluster import LocalCluster
from devcluster.sample_jobs import pi_mpijob
from devcluster.testing import OperatorProcess, wait_until


@pytest.fixture
def operator_process(
    full_cluster: LocalCluster, full_namespace: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    proc = OperatorProcess(
        [
            f"--kubeConfig={full_cluster.kubeconfig}",
            f"--namespace={full_namespace}",
            f"--lock-namespace={full_namespace}",
            "--kube-api-qps=50",
            "--kube-api-burst=100",
        ],
        tmp_path / "operator.log",
    )
    try:
        yield proc.start()
    finally:
        proc.kill()
        print(f"--- operator log (exit {proc.poll()}) ---\n{proc.output()[-6000:]}")


def _condition(cluster: LocalCluster, ns: str, name: str, kind: str) -> str:
    out = cluster.kubectl("get", "mpijob", name, "-n", ns, "-o", "json")
    for c in (json.loads(out.stdout).get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return str(c["status"])
    return ""


def _metric(text: str, name: str) -> float | None:
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(m.group(1)) if m else None


def test_operator_process_runs_an_mpijob_to_success(
    full_cluster: LocalCluster, full_namespace: str, operator_process: OperatorProcess
) -> None:
    proc, ns = operator_process, full_namespace

    def leading() -> bool:
        assert proc.poll() is None, proc.output()
        return "mpi_operator_is_leader 1.0" in proc.metrics()

    wait_until(leading, 60, "the operator to lead")
    assert proc.healthz() == (200, "ok")

    full_cluster.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(pi_mpijob("pi")))
    wait_until(lambda: _condition(full_cluster, ns, "pi", "Running") == "True", 90, "Running")
    wait_until(lambda: _condition(full_cluster, ns, "pi", "Succeeded") == "True", 90, "Succeeded")

    metrics = wait_until(
        lambda: (
            (m := proc.metrics()) and _metric(m, "mpi_operator_jobs_successful_total") == 1.0 and m
        ),
        10,
        "jobs_successful_total 1",
    )
    assert _metric(metrics, "mpi_operator_jobs_created_total") == 1.0
    assert _metric(metrics, "mpi_operator_jobs_failed_total") == 0.0
    assert _metric(metrics, 'workqueue_adds_total{name="mpijob"}') not in (None, 0.0)

    events = json.loads(full_cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout)
    sources = {
        (e.get("source") or {}).get("component") or e.get("reportingComponent")
        for e in events["items"]
        if e["involvedObject"].get("kind") == "MPIJob"
    }
    assert sources == {"mpi-job-controller"}  # the reference's source for MPIJob events

    proc.signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    lease = json.loads(
        full_cluster.kubectl("get", "lease", "mpi-operator", "-n", ns, "-o", "json").stdout
    )
    assert not lease["spec"].get("holderIdentity")
