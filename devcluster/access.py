"""Calls to a running local cluster as its admin: REST, kubectl, CRDs, namespaces, tokens."""

from __future__ import annotations

import base64
import functools
import json
import ssl
import subprocess
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from . import binaries as binmod
from . import components
from .pki import Pki
from .waiting import wait_for

API = "api"
FULL = "full"
#: ``full`` plus one real node (containerd, kubelet, CNI, CoreDNS): see ``realnode``.
REAL = "real"
START_TIMEOUT = 120.0


class ClusterError(RuntimeError):
    """The control plane failed to start or to answer."""


class KubectlError(subprocess.CalledProcessError):
    """``kubectl`` exited non-zero; ``str()`` shows its stderr."""

    def __str__(self) -> str:
        err = (self.stderr or "").strip()
        return f"{' '.join(map(str, self.cmd))} exited {self.returncode}: {err}"


class ClusterAccess:
    """What :class:`~.cluster.LocalCluster` offers once it runs (its base class)."""

    server: str
    kubeconfig: Path
    pki: Pki
    shape: str
    ports: dict[str, int]
    _ssl: ssl.SSLContext | None

    @property
    def bins(self) -> binmod.Binaries:
        raise NotImplementedError

    def _wait(self, what: str, check: Callable[[], Any], timeout: float = START_TIMEOUT) -> Any:
        try:
            return wait_for(check, timeout, what)
        except TimeoutError as e:
            raise ClusterError(str(e)) from None

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bins["kubectl"]), f"--kubeconfig={self.kubeconfig}", *args]
        out = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
        if check and out.returncode != 0:
            raise KubectlError(out.returncode, cmd, out.stdout, out.stderr)
        return out

    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            ctx = ssl.create_default_context(cafile=str(self.pki.ca_crt))
            ctx.load_cert_chain(str(self.pki.admin_crt), str(self.pki.admin_key))
            self._ssl = ctx
        return self._ssl

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> tuple[int, Any]:
        """One call to the API server as the admin user: (HTTP status, decoded JSON body)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self.ssl_context(), timeout=timeout) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def _get(self, path: str) -> Any:
        status, body = self.request("GET", path)
        return body if status == 200 else None

    def ensure(self, obj: dict[str, Any]) -> None:
        """Create ``obj`` (a cluster-scoped core/v1 or group object) unless it exists."""
        self._create_unless_exists(_collection_path(obj), obj)

    def apply(self, obj: dict[str, Any]) -> None:
        """Server-side apply ``obj`` (cluster-scoped), forcing ownership."""
        path = f"{_collection_path(obj)}/{obj['metadata']['name']}"
        query = urllib.parse.urlencode(
            {"fieldManager": "mpi-operator-localcluster", "force": "true"}
        )
        status, body = self.request(
            "PATCH", f"{path}?{query}", obj, content_type="application/apply-patch+yaml"
        )
        if status not in (200, 201):
            raise ClusterError(f"applying {obj['kind']} {obj['metadata']['name']}: {status} {body}")

    def install_crds(self, files: Iterable[Path]) -> list[str]:
        """Apply every CustomResourceDefinition in ``files``; wait until each is Established."""
        names: list[str] = []
        for f in files:
            for doc in yaml.safe_load_all(f.read_text()):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    self.apply(doc)
                    names.append(doc["metadata"]["name"])
        for name in names:
            self._wait(f"CRD {name} Established", functools.partial(self._crd_established, name))
        return names

    def _crd_established(self, name: str) -> bool:
        crd = self._get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        conds = (crd or {}).get("status", {}).get("conditions", [])
        return any(c["type"] == "Established" and c["status"] == "True" for c in conds)

    def create_namespace(self, prefix: str = "test", wait_for_sa: bool | None = None) -> str:
        """Create a uniquely named namespace (with its default ServiceAccount if full)."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if wait_for_sa if wait_for_sa is not None else self.shape != API:
            self._wait(
                f"ServiceAccount {name}/default",
                lambda: self._get(f"/api/v1/namespaces/{name}/serviceaccounts/default"),
                timeout=60,
            )
        return name

    def delete_namespace(self, name: str) -> None:
        self.request("DELETE", f"/api/v1/namespaces/{name}")

    def cluster_admin_service_account(self, namespace: str, account: str) -> None:
        """Creates ``namespace``, a ServiceAccount in it and its binding to cluster-admin,
        each unless it exists (a cluster restarted on its old data has them)."""
        self.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        self._create_unless_exists(
            f"/api/v1/namespaces/{namespace}/serviceaccounts",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}},
        )
        self._create_unless_exists(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{namespace}-{account}-admin"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "cluster-admin",
                },
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
            },
        )

    def _create_unless_exists(self, path: str, obj: dict[str, Any]) -> None:
        status, body = self.request("POST", path, obj)
        if status not in (200, 201, 409):
            raise ClusterError(f"creating {obj['kind']} {obj['metadata']['name']}: {status} {body}")

    def token_kubeconfig(
        self, namespace: str, account: str, path: Path, duration: str = "2h"
    ) -> Path:
        """Writes a kubeconfig that authenticates as the ServiceAccount with a fresh token."""
        token = self.kubectl(
            "create", "token", account, "-n", namespace, f"--duration={duration}"
        ).stdout.strip()
        config = self._kubeconfig(account, {"token": token})
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)
        return path

    def _write_kubeconfig(self) -> None:
        def b64(p: Path) -> str:
            return base64.b64encode(p.read_bytes()).decode()

        config = self._kubeconfig(
            "admin",
            {
                "client-certificate-data": b64(self.pki.admin_crt),
                "client-key-data": b64(self.pki.admin_key),
            },
        )
        tmp = self.kubeconfig.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump(config, sort_keys=False))
        tmp.chmod(0o600)
        tmp.replace(self.kubeconfig)

    def _component_get(self, component: str, path: str) -> tuple[int, bytes]:
        """GET ``path`` from a control-plane component's own port (its serving
        certificate is self-signed, and the path one it allows anonymously)."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{self.ports[component]}{path}"
        with urllib.request.urlopen(url, context=ctx, timeout=5) as r:
            return int(r.status), r.read()

    def _healthz(self, component: str) -> bool:
        return self._component_get(component, "/healthz")[0] == 200

    def component_metrics(self, component: str) -> str:
        """The Prometheus text of ``kube-scheduler``'s or
        ``kube-controller-manager``'s ``/metrics`` (shape ``full``)."""
        status, body = self._component_get(component, "/metrics")
        if status != 200:
            raise ClusterError(f"{component} /metrics answered {status}")
        return body.decode()

    def _kubeconfig(self, user: str, credentials: dict[str, str]) -> dict[str, Any]:
        return components.kubeconfig(self.server, self.pki.ca_crt, user, credentials)


def _collection_path(obj: dict[str, Any]) -> str:
    api_version: str = obj["apiVersion"]
    kind: str = obj["kind"]
    plural = {
        "Node": "nodes",
        "Namespace": "namespaces",
        "CustomResourceDefinition": "customresourcedefinitions",
        "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
        "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
    }.get(kind)
    if plural is None:
        raise ValueError(f"unsupported kind {kind}")
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{prefix}/{plural}"
