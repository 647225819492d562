"""The operator process keeps working when its credentials lapse, without a restart.

Its kubeconfig names an ``exec`` plugin (a small script written here, as EKS, GKE and
AKS kubeconfigs do) that hands out short-lived ServiceAccount tokens from the real
TokenRequest API, each bound to a fresh Secret (``kubectl create token
--bound-object-kind Secret``): deleting that Secret invalidates the token at once,
as an expiry would. The ServiceAccount is bound to cluster-admin.
"""

from __future__ import annotations

import itertools
import json
import ssl
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from devcluster import LocalCluster, components
from devcluster.sample_jobs import pi_mpijob
from devcluster.testing import OperatorProcess, StartOperator, wait_until

# Enough lease that a plugin run (two kubectl calls on a loaded machine) never costs it.
ELECTION = (
    "--lease-duration=15",
    "--renew-deadline=10",
    "--retry-period=1",
    "--shutdown-drain-seconds=1",
)
REJECTED = "credentials rejected (401); retrying with reloaded ones"

PLUGIN = """\
import datetime, json, os, subprocess, sys, time
began = time.time()
env = os.environ
state = env["CREDS_STATE"]
with open(state) as f:
    n = len(f.readlines()) + 1
kubectl = [env["CREDS_KUBECTL"], "--kubeconfig", env["CREDS_ADMIN"], "-n", env["CREDS_NS"]]
secret = f"token-holder-{n}"
subprocess.run(kubectl + ["create", "secret", "generic", secret], check=True,
               capture_output=True)
token = subprocess.run(
    kubectl + ["create", "token", env["CREDS_SA"], "--bound-object-kind=Secret",
               f"--bound-object-name={secret}", "--duration=1h"],
    check=True, capture_output=True, text=True).stdout.strip()
announced = float(env["CREDS_ANNOUNCED_SECONDS"])
now = datetime.datetime.now(datetime.timezone.utc)
expiry = now + datetime.timedelta(seconds=announced)
with open(state, "a") as f:
    f.write(json.dumps({"secret": secret, "token": token, "at": time.time(), "began": began,
                        "expiry": expiry.timestamp()}) + "\\n")
json.dump({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
           "status": {"token": token,
                      "expirationTimestamp": expiry.strftime("%Y-%m-%dT%H:%M:%SZ")}},
          sys.stdout)
"""


class ExecIdentity:
    """A ServiceAccount whose tokens come from the plugin; ``calls()`` lists its runs."""

    def __init__(self, cluster: LocalCluster, ns: str, tmp: Path, announced: float) -> None:
        self.cluster, self.ns = cluster, ns
        account = "exec-operator"
        cluster.kubectl("-n", ns, "create", "serviceaccount", account)
        cluster.kubectl(
            "create",
            "clusterrolebinding",
            f"{ns}-exec-admin",
            "--clusterrole=cluster-admin",
            f"--serviceaccount={ns}:{account}",
        )
        self.state = tmp / "plugin-calls.jsonl"
        self.state.write_text("")
        plugin = tmp / "plugin.py"
        plugin.write_text(PLUGIN)
        env = {
            "CREDS_STATE": str(self.state),
            "CREDS_KUBECTL": str(cluster.bins["kubectl"]),
            "CREDS_ADMIN": str(cluster.kubeconfig),
            "CREDS_NS": ns,
            "CREDS_SA": account,
            "CREDS_ANNOUNCED_SECONDS": str(announced),
        }
        exec_config = {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(plugin)],
            "env": [{"name": k, "value": v} for k, v in env.items()],
            "interactiveMode": "Never",
        }
        config = components.kubeconfig(
            cluster.server, cluster.pki.ca_crt, account, {"exec": exec_config}
        )
        self.kubeconfig = tmp / "exec.kubeconfig"
        self.kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))

    def calls(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.state.read_text().splitlines() if line]

    def invalidate(self, call: dict[str, Any]) -> None:
        self.cluster.kubectl("-n", self.ns, "delete", "secret", call["secret"])

    def refused(self, call: dict[str, Any]) -> bool:
        """Whether kube-apiserver now answers this token with 401 (it caches a token's
        success for 10 s, so a revocation takes up to that long)."""
        request = urllib.request.Request(
            f"{self.cluster.server}/api/v1/namespaces/{self.ns}",
            headers={"Authorization": f"Bearer {call['token']}"},
        )
        # No client certificate: the token alone is judged.
        tls = ssl.create_default_context(cafile=str(self.cluster.pki.ca_crt))
        try:
            with urllib.request.urlopen(request, context=tls, timeout=10):
                return False
        except urllib.error.HTTPError as err:
            return err.code == 401


def _created(cluster: LocalCluster, ns: str, name: str, proc: OperatorProcess) -> bool:
    assert proc.poll() is None, f"operator exited {proc.poll()}:\n{proc.output()[-3000:]}"
    out = cluster.kubectl("-n", ns, "get", "mpijob", name, "-o", "json", check=False)
    if out.returncode != 0:
        return False
    conditions = (json.loads(out.stdout).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Created" and c["status"] == "True" for c in conditions)


def _submit(cluster: LocalCluster, ns: str, name: str) -> None:
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=json.dumps(pi_mpijob(name)))


def _start(start: StartOperator, identity: ExecIdentity, ns: str) -> OperatorProcess:
    proc = start(
        f"--kubeConfig={identity.kubeconfig}",
        f"--namespace={ns}",
        f"--lock-namespace={ns}",
        *ELECTION,
    )
    wait_until(lambda: "mpi_operator_is_leader 1.0" in proc.metrics(), 60, "the operator to lead")
    return proc


def test_a_revoked_exec_token_is_replaced_and_the_request_retried(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator, tmp_path: Path
) -> None:
    identity = ExecIdentity(api_cluster, namespace, tmp_path, announced=3600)
    proc = _start(start_operator, identity, namespace)
    _submit(api_cluster, namespace, "before")
    wait_until(lambda: _created(api_cluster, namespace, "before", proc), 60, "'before' Created")
    assert len(identity.calls()) == 1, "one token, shared by the operator's clients"

    in_use = identity.calls()[-1]
    identity.invalidate(in_use)
    wait_until(lambda: identity.refused(in_use), 30, "the token in use to be refused")
    _submit(api_cluster, namespace, "after")
    wait_until(lambda: _created(api_cluster, namespace, "after", proc), 60, "'after' Created")
    # The Lease is renewed every second: it met the 401 first, and kept its holder.
    assert REJECTED in proc.output()
    assert proc.poll() is None
    assert len(identity.calls()) >= 2
    assert "leader election lost" not in proc.output()
    assert proc.healthz()[0] == 200


def test_exec_tokens_are_refreshed_before_they_expire(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator, tmp_path: Path
) -> None:
    """Each token announces a 20 s life and is revoked (its Secret deleted) as soon as
    that is over: the operator must have switched to the next one before (it does so
    a fifth of the life ahead, 4 s, and a request comes every second: the Lease's
    renewal), so that no request of it is ever refused. The two lapses take 1.8 lives;
    the printed margins are what the plugin's runs (two kubectl calls) left of those 4 s."""
    identity = ExecIdentity(api_cluster, namespace, tmp_path, announced=20)
    proc = _start(start_operator, identity, namespace)
    revoked: set[str] = set()

    def revoke_lapsed() -> int:
        for call in identity.calls():
            if call["expiry"] <= time.time() and call["secret"] not in revoked:
                identity.invalidate(call)
                revoked.add(call["secret"])
        assert proc.poll() is None, proc.output()[-3000:]
        return len(revoked) >= 2

    wait_until(revoke_lapsed, 120, "two tokens to lapse", interval=0.2)
    _submit(api_cluster, namespace, "late")
    wait_until(lambda: _created(api_cluster, namespace, "late", proc), 60, "'late' Created")
    calls = identity.calls()
    for previous, following in itertools.pairwise(calls):
        print(
            f"plugin run {following['at'] - following['began']:.2f}s, "
            f"token replaced {previous['expiry'] - following['at']:.2f}s before its expiry"
        )
    # Every token was replaced before the previous one's announced expiry.
    for previous, following in itertools.pairwise(calls):
        assert following["at"] < previous["expiry"], (previous, following)
    assert REJECTED not in proc.output(), "a request was sent with a lapsed token"
    assert "leader election lost" not in proc.output()
