"""Helpers of test_chaos_faults.py: a kube-apiserver that answers the operator, and
only the operator, with real 429 and 5xx responses.

* :class:`FaultCluster`: the full local cluster with API Priority and Fairness on and
  an audit log of one ServiceAccount (the operator's identity, token kubeconfig);
  every other client (the test, kube-controller-manager, KWOK) is ``system:masters``,
  exempt from APF and not audited.
* :class:`FaultWebhook`: an HTTPS admission webhook on 127.0.0.1 that denies every
  k-th mutating request of each kind with ``status.code`` 429, 500 or 503 (passed
  through to the client by kube-apiserver), lets some calls time out or answers them
  with HTTP 500 (kube-apiserver then fails the request itself, "failed calling
  webhook", 500 InternalError, with ``failurePolicy: Fail``).
* :func:`apf_objects`: a FlowSchema and a PriorityLevelConfiguration (Limited, one
  nominal share, limitResponse Reject) for the operator's user.
* :func:`audit_responses`: the operator's answered requests, by code.
"""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import threading
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from socket import socket
from typing import Any

from chaos_support import Obj, Operators

from devcluster import FULL, LocalCluster
from devcluster.audit import audit_code
from devcluster.pki import generate
from devcluster.testing import wait_until

IDENTITY_NAMESPACE = "chaos-faults"
OPERATOR_SA = "operator"
OPERATOR_USER = f"system:serviceaccount:{IDENTITY_NAMESPACE}:{OPERATOR_SA}"

ADMISSION = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
FLOW_SCHEMAS = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
PRIORITY_LEVELS = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"


class FaultCluster(LocalCluster):
    """The full shape, APF enabled, the operator's ServiceAccount audited."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir, FULL, audit_users=[OPERATOR_USER])
        self.operator_kubeconfig = self.workdir / "operator.kubeconfig"

    def _apiserver_args(self, binary: Path) -> list[str]:
        return [
            "--enable-priority-and-fairness=true"
            if a == "--enable-priority-and-fairness=false"
            else a
            for a in super()._apiserver_args(binary)
        ]

    def start(self) -> None:
        super().start()
        self.cluster_admin_service_account(IDENTITY_NAMESPACE, OPERATOR_SA)
        self.token_kubeconfig(IDENTITY_NAMESPACE, OPERATOR_SA, self.operator_kubeconfig, "4h")

    def apiserver_metric(self, name: str, **labels: str) -> float:
        """Sum of one metric of kube-apiserver's /metrics over the series with ``labels``."""
        status, body = self.request("GET", "/metrics")
        assert status == 200, body
        total = 0.0
        for line in str(body).splitlines():
            if not line.startswith(name + "{"):
                continue
            series, _, value = line.rpartition(" ")
            if all(f'{k}="{v}"' in series for k, v in labels.items()):
                total += float(value)
        return total


class FaultOperators(Operators):
    """:class:`Operators` whose processes authenticate as the audited ServiceAccount."""

    def __init__(self, cluster: FaultCluster, tmp: Path) -> None:
        super().__init__(cluster, tmp, kubeconfig=cluster.operator_kubeconfig)

    def sync_failures(self) -> Counter[str]:
        """ "sync failed; retrying" log records, by the HTTP status they start with."""
        out: Counter[str] = Counter()
        for proc in self.procs:
            for record in proc.records():
                if record.get("event") == "sync failed; retrying":
                    out[str(record.get("error", "?")).split(" ", 1)[0]] += 1
        return out

    def inflated_backoff(self, names: list[str], at_least: int = 12) -> list[str]:
        """ "sync failed; retrying" records of these MPIJobs whose key had been rate
        limited ``at_least`` times since its last good sync (a wait of 5 ms *
        2^(at_least-1) or more before the next try)."""
        out = []
        for proc in self.procs:
            for record in proc.records():
                key = str(record.get("mpijob", ""))
                if (
                    record.get("event") == "sync failed; retrying"
                    and key.rpartition("/")[2] in names
                    and int(record.get("requeues") or 0) >= at_least
                ):
                    out.append(
                        f"{record.get('timestamp')} {key} requeues={record.get('requeues')} "
                        f"{str(record.get('error'))[:120]}"
                    )
        return out


# -- the admission webhook ------------------------------------------------------------

#: What the webhook does to the k-th request of each kind, in turn.
DENY_429, DENY_500, DENY_503 = "deny-429", "deny-500", "deny-503"
CALL_TIMEOUT, CALL_HTTP_500 = "call-timeout", "call-http-500"
FAULTS = (DENY_429, DENY_500, DENY_503, CALL_TIMEOUT, CALL_HTTP_500)
_DENIALS = {
    DENY_429: (429, "TooManyRequests"),
    DENY_500: (500, "InternalError"),
    DENY_503: (503, "ServiceUnavailable"),
}

#: The operator's writes: (apiGroups, apiVersions, operations, resources).
WEBHOOK_RULES = [
    ([""], ["v1"], ["CREATE"], ["pods"]),
    (["batch"], ["v1"], ["CREATE"], ["jobs"]),
    ([""], ["v1"], ["CREATE", "UPDATE"], ["configmaps", "services", "secrets"]),
    (["kubeflow.org"], ["v2beta1"], ["UPDATE"], ["mpijobs/status"]),
    (["", "events.k8s.io"], ["v1"], ["CREATE", "UPDATE"], ["events"]),
]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    webhook: FaultWebhook

    def finish_request(self, request: Any, client_address: Any) -> None:
        # The TLS handshake in the request's thread, not in the accepting one.
        request.settimeout(10)
        try:
            tls = self.webhook.ssl_context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            return
        tls.settimeout(None)  # idle keep-alive connections are closed by the client only
        try:
            super().finish_request(tls, client_address)
        finally:
            with contextlib.suppress(OSError):
                tls.close()

    def shutdown_request(self, request: socket) -> None:  # type: ignore[override]
        with contextlib.suppress(OSError):
            request.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # http.server.s naming
        webhook = self.server.webhook
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        review = json.loads(body)
        request = review["request"]
        fault = webhook.decide(request)
        if fault == CALL_TIMEOUT:
            # Longer than the webhook's timeoutSeconds: kube-apiserver gives up first.
            webhook.stopped.wait(webhook.timeout_seconds + 1.5)
            self.close_connection = True
            return
        if fault == CALL_HTTP_500:
            self._send(500, b"chaos: injected webhook failure", "text/plain", close=True)
            return
        response: Obj = {"uid": request["uid"], "allowed": fault is None}
        if fault is not None:
            code, reason = _DENIALS[fault]
            status: Obj = {
                "code": code,
                "reason": reason,
                "message": f"chaos: injected {code}",
            }
            if code == 429:
                status["details"] = {"retryAfterSeconds": 1}
            response["status"] = status
        out = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        self._send(200, json.dumps(out).encode(), "application/json")

    def _send(self, code: int, data: bytes, content_type: str, close: bool = False) -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            if close:
                self.send_header("Connection", "close")  # sets close_connection
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True


class FaultWebhook:
    """Denies (or fails the call of) every ``every``-th request of each kind (resource,
    subresource, operation) from ``user``; the faults of :data:`FAULTS` in turn."""

    def __init__(self, workdir: Path, every: int = 3, timeout_seconds: int = 1) -> None:
        self.every = every
        self.timeout_seconds = timeout_seconds
        self.pki = generate(workdir / "webhook-pki")  # a fresh CA, a 127.0.0.1 serving cert
        self.ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ssl_context.load_cert_chain(str(self.pki.serving_crt), str(self.pki.serving_key))
        self.stopped = threading.Event()
        self.lock = threading.Lock()
        self.calls: Counter[str] = Counter()  # kind -> calls
        self.faults: Counter[str] = Counter()  # fault -> how many
        self.by_kind: Counter[str] = Counter()  # "kind fault" -> how many
        self.users: set[str] = set()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.webhook = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}/admit"

    def __enter__(self) -> FaultWebhook:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def decide(self, request: Obj) -> str | None:
        resource = request["resource"]["resource"]
        if request.get("subResource"):
            resource += "/" + request["subResource"]
        kind = f"{request['operation']} {resource}"
        with self.lock:
            self.users.add(str((request.get("userInfo") or {}).get("username")))
            self.calls[kind] += 1
            if self.calls[kind] % self.every:
                return None
            fault = FAULTS[sum(self.faults.values()) % len(FAULTS)]
            self.faults[fault] += 1
            self.by_kind[f"{kind} {fault}"] += 1
            return fault

    def configuration(self, name: str, namespace: str, user: str = OPERATOR_USER) -> Obj:
        """A ValidatingWebhookConfiguration sending here the operator's writes in
        ``namespace`` only (namespaceSelector, and a matchCondition on the user)."""
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [
                {
                    "name": "faults.chaos.mpi-operator.example.com",
                    "clientConfig": {
                        "url": self.url,
                        "caBundle": base64.b64encode(self.pki.ca_crt.read_bytes()).decode(),
                    },
                    "rules": [
                        {
                            "apiGroups": groups,
                            "apiVersions": versions,
                            "operations": operations,
                            "resources": resources,
                            "scope": "Namespaced",
                        }
                        for groups, versions, operations, resources in WEBHOOK_RULES
                    ],
                    "failurePolicy": "Fail",
                    "matchPolicy": "Equivalent",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": self.timeout_seconds,
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": namespace}
                    },
                    "matchConditions": [
                        {
                            "name": "operator-only",
                            "expression": f"request.userInfo.username == '{user}'",
                        }
                    ],
                }
            ],
        }


# -- API Priority and Fairness ----------------------------------------------------------


def apf_objects(name: str, user: str = OPERATOR_USER, shares: int = 1) -> tuple[Obj, Obj]:
    """A priority level of ``shares`` nominal shares that rejects what does not fit at
    once, and a FlowSchema putting there every request of ``user`` to the core, batch,
    kubeflow.org and events groups (not its leader-election Lease: a lost lease is not
    what is tested here)."""
    level = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name},
        "spec": {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": shares,
                "lendablePercent": 0,
                "borrowingLimitPercent": 0,
                "limitResponse": {"type": "Reject"},
            },
        },
    }
    groups = ["", "batch", "kubeflow.org", "events.k8s.io"]
    schema = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": name},
        "spec": {
            "priorityLevelConfiguration": {"name": name},
            "matchingPrecedence": 100,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [
                {
                    "subjects": [
                        {
                            "kind": "ServiceAccount",
                            "serviceAccount": {
                                "namespace": IDENTITY_NAMESPACE,
                                "name": OPERATOR_SA,
                            },
                        }
                        if user == OPERATOR_USER
                        else {"kind": "User", "user": {"name": user}}
                    ],
                    "resourceRules": [
                        {
                            "verbs": ["*"],
                            "apiGroups": groups,
                            "resources": ["*"],
                            "clusterScope": True,
                            "namespaces": ["*"],
                        }
                    ],
                }
            ],
        },
    }
    return level, schema


def wait_flow_schema_active(cluster: LocalCluster, name: str, timeout: float = 30) -> None:
    """Until kube-apiserver's APF config controller has taken the FlowSchema in (it
    writes its Dangling condition once it has)."""

    def active() -> bool:
        status, body = cluster.request("GET", f"{FLOW_SCHEMAS}/{name}")
        conds = (body or {}).get("status", {}).get("conditions") or [] if status == 200 else []
        return any(c.get("type") == "Dangling" and c.get("status") == "False" for c in conds)

    wait_until(active, timeout, f"FlowSchema {name} in use", 0.2)


# -- the audit log ----------------------------------------------------------------------


def audit_responses(cluster: LocalCluster, start: int = 0, user: str = OPERATOR_USER) -> list[Obj]:
    """The audit events of ``user`` written after offset ``start``: one dict each with
    ``verb``, ``resource`` (with its subresource), ``code`` and ``message``."""
    out: list[Obj] = []
    for ev in cluster.audit_events(start, user=user):
        ref = ev.get("objectRef") or {}
        resource = ref.get("resource") or urllib.parse.urlsplit(ev.get("requestURI", "")).path
        if ref.get("subresource"):
            resource += "/" + ref["subresource"]
        out.append(
            {
                "verb": ev.get("verb", "?"),
                "resource": resource,
                "code": audit_code(ev),
                "message": str((ev.get("responseStatus") or {}).get("message") or ""),
            }
        )
    return out
