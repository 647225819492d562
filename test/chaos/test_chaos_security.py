"""SSH keys: a Secret per MPIJob, owned by it and gone with it, unique per job, and
never in the operator's logs (at debug level, tracebacks included), events, statuses,
metrics or health endpoints. (Every other test of the suite scans its operators' logs
too, through the ``operators`` fixture. The manifests' non-root, read-only root filesystem checks are
in test/unit/test_deploy_manifests.py and test/unit/test_dockerfile.py.)"""

from __future__ import annotations

import base64
from pathlib import Path

from chaos_support import (
    Operators,
    api,
    create_mpijob,
    leaks,
    list_items,
    report,
    secret_material,
    wait_final,
    wait_leading,
)

from devcluster import LocalCluster
from devcluster.sample_jobs import pi_mpijob
from devcluster.testing import wait_until

FAULTS = Path(__file__).resolve().parents[1] / "fixtures" / "faults"


def test_chaos_ssh_keys_are_owned_unique_and_never_exposed(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators
) -> None:
    ns = full_namespace
    proc = operators.start(ns, "--log-level=debug")
    wait_leading(proc)
    names = [f"keys-{i}" for i in range(4)]
    uids = {n: create_mpijob(full_cluster, ns, pi_mpijob(n))["metadata"]["uid"] for n in names}
    wait_final(full_cluster, ns, dict.fromkeys(names, "Succeeded"), timeout=120)

    secrets = {
        s["metadata"]["name"]: s
        for s in list_items(full_cluster, f"/api/v1/namespaces/{ns}/secrets")
        if "ssh-privatekey" in (s.get("data") or {})
    }
    assert set(secrets) == {f"{n}-ssh" for n in names}
    private, public = set(), set()
    for name in names:
        secret = secrets[f"{name}-ssh"]
        assert secret["type"] == "kubernetes.io/ssh-auth"
        owners = secret["metadata"].get("ownerReferences") or []
        assert [(o["kind"], o["name"], o["uid"], o.get("controller")) for o in owners] == [
            ("MPIJob", name, uids[name], True)
        ], owners
        pem = base64.b64decode(secret["data"]["ssh-privatekey"]).decode()
        assert "PRIVATE KEY" in pem
        private.add(secret["data"]["ssh-privatekey"])
        public.add(secret["data"]["ssh-publickey"])
    assert len(private) == len(public) == len(names), "a key shared between jobs"

    material = secret_material(full_cluster, ns)
    # The scanner finds a key when it is there, encoded or not.
    some = next(iter(private))
    assert leaks(f"x {some} y", material - {"PRIVATE KEY"})
    body = "\n".join(base64.b64decode(some).decode().splitlines()[1:-1])
    assert leaks(body, material)
    exposed = {
        "/metrics": proc.metrics(),
        "/healthz": proc.healthz()[1],
        "/": proc._get(proc.monitoring_port, "/")[1],
        "/readyz": proc._get(proc.healthz_port, "/readyz")[1],
    }
    for path, body in exposed.items():
        assert not leaks(body, material), path
    debug_lines = len(proc.output().splitlines())
    assert not leaks(proc.output(), material)
    operators.collect_secrets()

    # Gone with its MPIJob (the garbage collector follows the owner reference).
    api(full_cluster, "DELETE", f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/{names[0]}")
    wait_until(
        lambda: (
            full_cluster.request("GET", f"/api/v1/namespaces/{ns}/secrets/{names[0]}-ssh")[0] == 404
        ),
        60,
        "the Secret deleted with its MPIJob",
        0.5,
    )
    report(
        test="ssh-keys",
        jobs=len(names),
        unique_keys=len(private),
        debug_log_lines_scanned=debug_lines,
        endpoints_scanned=len(exposed),
        leaks=0,
    )


def test_chaos_traceback_with_a_key_in_scope_leaks_nothing(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators
) -> None:
    """An unexpected error while the SSH Secret is being created (injected by
    test/fixtures/faults: its message holds the Secret and the decoded private key,
    and the callers' locals hold the key) is logged with its traceback, at debug
    level, with no key material: no locals, and PEM blocks and their base64 cut out."""
    ns = full_namespace
    env = {"PYTHONPATH": str(FAULTS), "MPI_OPERATOR_TEST_FAULTS": "secret-create"}
    proc = operators.start(ns, "--log-level=debug", env=env)
    wait_leading(proc)
    create_mpijob(full_cluster, ns, pi_mpijob("traceback"))
    wait_final(full_cluster, ns, {"traceback": "Succeeded"}, timeout=120)

    failures = [
        r
        for r in proc.records()
        if r.get("event") == "sync failed; retrying"
        and "injected fault creating" in str(r.get("error"))
    ]
    assert len(failures) == 2, [r.get("event") for r in proc.records()]
    for record in failures:
        (exc,) = record["exception"]
        assert exc["exc_type"] == "RuntimeError"
        assert "injected fault creating" in exc["exc_value"]
        assert exc["frames"] and all("locals" not in f for f in exc["frames"])
    material = secret_material(full_cluster, ns)
    assert material
    assert not leaks(proc.output(), material)
    report(test="traceback-with-key", tracebacks=len(failures), leaks=0)
