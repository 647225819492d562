"""The mpi-operator process against a real kube-apiserver: leader election, /healthz,
/metrics, graceful shutdown, fail-over and the start-up checks."""

from __future__ import annotations

import json
import signal
import time
import urllib.error
from pathlib import Path
from typing import Any

import pytest

from devcluster import LocalCluster
from devcluster.testing import StartOperator, free_port, free_ports, wait_until

FAULTS = Path(__file__).resolve().parents[2] / "fixtures" / "faults"
# Short timings so fail-over tests take seconds: lease 4 s, renew deadline 3 s, retry 1 s
# (which leave no time for a drain: renew deadline + retry period = lease duration).
FAST_ELECTION = (
    "--lease-duration=4",
    "--renew-deadline=3",
    "--retry-period=1",
    "--shutdown-drain-seconds=0",
)


def _lease(cluster: LocalCluster, namespace: str) -> dict[str, Any] | None:
    out = cluster.kubectl(
        "get", "lease", "mpi-operator", "-n", namespace, "-o", "json", check=False
    )
    if out.returncode != 0:
        return None
    lease: dict[str, Any] = json.loads(out.stdout)
    return lease


def _holder(cluster: LocalCluster, namespace: str) -> str:
    lease = _lease(cluster, namespace)
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def _args(cluster: LocalCluster, namespace: str, *extra: str) -> tuple[str, ...]:
    return (
        f"--kubeConfig={cluster.kubeconfig}",
        f"--lock-namespace={namespace}",
        f"--namespace={namespace}",
        *extra,
    )


def _wait_leader(cluster: LocalCluster, namespace: str, proc: Any, timeout: float = 30) -> str:
    def leading() -> str | None:
        assert proc.poll() is None, f"operator exited {proc.poll()}:\n{proc.output()}"
        ident = proc.identity()
        return ident if ident and _holder(cluster, namespace) == ident else None

    ident: str = wait_until(leading, timeout, "the operator to hold the Lease")
    return ident


def test_leads_serves_health_and_metrics_and_releases_on_sigterm(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator
) -> None:
    proc = start_operator(*_args(api_cluster, namespace))
    ident = _wait_leader(api_cluster, namespace, proc)
    host = ident.rsplit("_", 1)[0]
    assert host and len(ident.rsplit("_", 1)[1]) == 36  # <hostname>_<uuid>

    assert wait_until(lambda: proc.healthz() == (200, "ok"), 10, "/healthz 200 ok")
    metrics = wait_until(
        lambda: (m := proc.metrics()) and "mpi_operator_is_leader 1.0" in m and m, 10, "is_leader 1"
    )
    assert 'workqueue_depth{name="mpijob"}' in metrics
    for name in (
        "mpi_operator_jobs_created_total",
        "mpi_operator_jobs_successful_total",
        "mpi_operator_jobs_failed_total",
    ):
        assert name in metrics
    # The controller is up: its informers have synced and its workers run.
    assert wait_until(
        lambda: any(r.get("event") == "controller started" for r in proc.records()),
        30,
        "controller started",
    )

    started = time.monotonic()
    proc.signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert time.monotonic() - started < 5, "shutdown took too long"
    spec = (_lease(api_cluster, namespace) or {}).get("spec", {})
    assert spec.get("holderIdentity") in (None, "")
    assert spec.get("leaseDurationSeconds") == 1


def test_sigint_also_exits_0(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator
) -> None:
    proc = start_operator(*_args(api_cluster, namespace, "--log-format=console"))
    wait_until(lambda: proc.healthz()[0] == 200, 30, "/healthz")
    wait_until(lambda: "mpi_operator_is_leader 1.0" in proc.metrics(), 30, "leadership")
    proc.signal(signal.SIGINT)
    assert proc.wait(timeout=10) == 0
    assert _holder(api_cluster, namespace) == ""


def test_two_processes_one_leader_then_failover_on_kill(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator
) -> None:
    a = start_operator(*_args(api_cluster, namespace, *FAST_ELECTION))
    b = start_operator(*_args(api_cluster, namespace, *FAST_ELECTION))
    procs = {p.pid: p for p in (a, b)}
    for p in (a, b):
        wait_until(lambda p=p: p.healthz()[0] == 200, 30, "both processes' /healthz")
    by_ident = {p.identity(): p for p in procs.values()}
    holder = wait_until(
        lambda: _holder(api_cluster, namespace) in by_ident and _holder(api_cluster, namespace),
        30,
        "a leader",
    )
    leader = by_ident[holder]
    follower = a if leader is b else b

    # Exactly one leads, and keeps leading over several retry periods.
    wait_until(lambda: "mpi_operator_is_leader 1.0" in leader.metrics(), 10, "leader gauge")
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert _holder(api_cluster, namespace) == holder
        follower_metrics = follower.metrics()
        assert "mpi_operator_is_leader 0.0" in follower_metrics
        # A follower exports the controller's metrics too (all zero).
        assert 'workqueue_depth{name="mpijob"} 0.0' in follower_metrics
        assert "mpi_operator_jobs_created_total 0.0" in follower_metrics
        assert follower.healthz()[0] == 200
        time.sleep(0.5)

    leader.signal(signal.SIGKILL)
    leader.wait(timeout=5)
    killed_at = time.monotonic()
    new_holder = wait_until(
        lambda: (h := _holder(api_cluster, namespace)) != holder and h,
        15,
        "the follower to take over",
    )
    assert new_holder == follower.identity()
    # The lease was 4 s; the follower retries every 1-2.2 s.
    assert time.monotonic() - killed_at < 4 + 4
    wait_until(lambda: "mpi_operator_is_leader 1.0" in follower.metrics(), 10, "new leader gauge")
    follower.signal(signal.SIGTERM)
    assert follower.wait(timeout=10) == 0


def test_missing_lock_namespace_exits_1(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator
) -> None:
    proc = start_operator(
        f"--kubeConfig={api_cluster.kubeconfig}", "--lock-namespace=no-such-namespace-x"
    )
    assert proc.wait(timeout=30) == 1
    assert "lock namespace 'no-such-namespace-x' does not exist" in proc.output()


def test_unreachable_api_server_exits_1(start_operator: StartOperator) -> None:
    proc = start_operator(f"--master=https://127.0.0.1:{free_port()}")
    assert proc.wait(timeout=30) == 1
    assert "cannot reach the Kubernetes API server" in proc.output()


def test_bad_kubeconfig_exits_1(start_operator: StartOperator, tmp_path: Any) -> None:
    proc = start_operator(f"--kubeConfig={tmp_path / 'missing'}")
    assert proc.wait(timeout=30) == 1
    assert "error building kube config" in proc.output()


def test_kubeconfig_env_is_used(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator
) -> None:
    proc = start_operator(
        f"--lock-namespace={namespace}",
        f"--namespace={namespace}",
        env={"KUBECONFIG": str(api_cluster.kubeconfig)},
    )
    _wait_leader(api_cluster, namespace, proc)
    proc.signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0


def test_sigterm_before_leading_exits_0(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator
) -> None:
    a = start_operator(*_args(api_cluster, namespace))
    _wait_leader(api_cluster, namespace, a)
    b = start_operator(*_args(api_cluster, namespace))
    wait_until(lambda: b.healthz()[0] == 200, 30, "the follower's /healthz")
    b.signal(signal.SIGTERM)
    assert b.wait(timeout=10) == 0
    assert _holder(api_cluster, namespace) == a.identity()


def test_losing_leadership_exits_1(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator
) -> None:
    proc = start_operator(*_args(api_cluster, namespace, *FAST_ELECTION))
    _wait_leader(api_cluster, namespace, proc)
    api_cluster.stop_apiserver()
    try:
        # No renewal can succeed: the leader steps down after the 3 s renew deadline.
        assert proc.wait(timeout=20) == 1
    finally:
        api_cluster.start_apiserver()
    assert any(r.get("event") == "leader election lost" for r in proc.records())


def test_master_overrides_the_kubeconfig_server(
    api_cluster: LocalCluster, start_operator: StartOperator
) -> None:
    dead = f"https://127.0.0.1:{free_port()}"
    proc = start_operator(f"--kubeConfig={api_cluster.kubeconfig}", f"--master={dead}")
    assert proc.wait(timeout=30) == 1
    assert f"cannot reach the Kubernetes API server at {dead}" in proc.output()


def test_an_informer_that_dies_makes_the_process_exit_1(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator
) -> None:
    """An informer task that died of an exception nobody handled used to leave the
    process running, on a frozen cache, with /healthz green. The fault (a bug in the
    watch decoder, injected by test/fixtures/faults) hits the configmaps informer
    when a ConfigMap with the operator's label and a poisonous name appears."""
    env = {"PYTHONPATH": str(FAULTS), "MPI_OPERATOR_TEST_FAULTS": "informer-poison"}
    proc = start_operator(*_args(api_cluster, namespace), env=env)
    _wait_leader(api_cluster, namespace, proc)
    wait_until(
        lambda: any(r.get("event") == "controller started" for r in proc.records()),
        30,
        "controller started",
    )
    assert proc.healthz() == (200, "ok")
    poison = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "informer-poison",
            "labels": {"training.kubeflow.org/operator-name": "mpi-operator"},
        },
    }
    api_cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(poison))
    assert proc.wait(timeout=30) == 1
    records = list(proc.records())
    deaths = [r for r in records if str(r.get("event")).startswith("informer died")]
    assert len(deaths) == 1, deaths
    assert deaths[0]["level"] == "error" and deaths[0]["resource"] == "configmaps.v1.core"
    assert "RuntimeError: injected fault" in deaths[0]["failure"]
    assert deaths[0]["exception"][0]["exc_type"] == "RuntimeError"
    exits = [r for r in records if str(r.get("event")).startswith("an informer died; exiting")]
    assert len(exits) == 1, records[-5:]


def test_the_bind_address_flags_choose_where_health_and_metrics_listen(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator
) -> None:
    """controller-runtime's --health-probe-bind-address and --metrics-bind-address
    (host:port) win over the older --healthz-port and --monitoring-port."""
    health, metrics = free_ports(2)
    proc = start_operator(
        *_args(
            api_cluster,
            namespace,
            f"--health-probe-bind-address=127.0.0.1:{health}",
            f"--metrics-bind-address=127.0.0.1:{metrics}",
        )
    )
    _wait_leader(api_cluster, namespace, proc)
    assert wait_until(lambda: proc._get(health, "/healthz") == (200, "ok"), 10, "/healthz")
    status, body = proc._get(metrics, "/metrics")
    assert status == 200 and "mpi_operator_is_leader 1.0" in body
    for older in (proc.healthz_port, proc.monitoring_port):
        with pytest.raises(urllib.error.URLError):
            proc._get(older, "/")
