"""A local Kubernetes control plane made of real binaries (see the package docstring)."""

from __future__ import annotations

import atexit
import base64
import contextlib
import functools
import json
import shutil
import signal
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import yaml

from . import binaries as binmod
from .pki import Pki, generate
from .procs import Process, free_ports

T = TypeVar("T")

API = "api"
FULL = "full"
SHAPES = (API, FULL)
STAGES_DIR = Path(__file__).parent / "stages"
SERVICE_CIDR = "10.96.0.0/12"
POD_CIDR = "10.244.0.0/16"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KCM_CONTROLLERS = (
    "job-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-token-controller",
    "serviceaccount-controller",
    "root-ca-certificate-publisher-controller",
    "ttl-after-finished-controller",
    "pod-garbage-collector-controller",
    "replicaset-controller",
    "deployment-controller",
)
#: Capacity of each fake node of the full shape.
NODE_CAPACITY = {"cpu": "64", "memory": "512Gi", "pods": "250", "nvidia.com/gpu": "8"}
START_TIMEOUT = 120.0
#: The group of every ServiceAccount's user (``audit_groups=[SERVICE_ACCOUNTS]``).
SERVICE_ACCOUNTS = "system:serviceaccounts"


class ClusterError(RuntimeError):
    """The control plane failed to start or to answer."""


class KubectlError(subprocess.CalledProcessError):
    """``kubectl`` exited non-zero; ``str()`` shows its stderr."""

    def __str__(self) -> str:
        err = (self.stderr or "").strip()
        return f"{' '.join(map(str, self.cmd))} exited {self.returncode}: {err}"


class StopWaitingError(Exception):
    """Raised by a :func:`wait_for` check to give up at once."""


def wait_for(check: Callable[[], T | None], timeout: float, what: str, interval: float = 0.2) -> T:
    """Poll ``check`` until it returns something not None/False; raise TimeoutError."""
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while True:
        try:
            result = check()
            if result is not None and result is not False:
                return result
        except StopWaitingError:
            raise
        except Exception as e:  # retried until the deadline
            last_exc = e
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_exc})" if last_exc else ""
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)


# ---- teardown on exit and on SIGTERM/SIGINT ---------------------------------------------

_live: set[LocalCluster] = set()
_live_lock = threading.Lock()


def _stop_all() -> None:
    with _live_lock:
        clusters = list(_live)
    for c in clusters:
        with contextlib.suppress(Exception):
            c.stop()


atexit.register(_stop_all)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def install_signal_handlers() -> None:
    """Turn SIGTERM/SIGHUP into KeyboardInterrupt so that finalizers and atexit run."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _raise_interrupt)


# ---- the cluster --------------------------------------------------------------------------


class LocalCluster:
    """etcd + kube-apiserver (shape ``api``), plus kube-controller-manager, kube-scheduler
    and a KWOK controller with fake nodes (shape ``full``), all on 127.0.0.1.

    ``detached=True`` lets the processes outlive this Python process (``up``/``down``);
    otherwise they are killed when it dies, even by SIGKILL.

    ``audit_users`` / ``audit_groups``: kube-apiserver writes a JSON audit log
    (:attr:`audit_log`; level Metadata, stage ResponseComplete only) of the requests
    of these users and of the members of these groups, and of nobody else; read it
    with :meth:`audit_events`. The admin user (the components, the tests' own calls)
    is in neither unless named. ``admission_plugins`` are enabled on top of the
    default ones (e.g. ``OwnerReferencesPermissionEnforcement``).
    """

    def __init__(
        self,
        workdir: Path,
        shape: str = API,
        *,
        detached: bool = False,
        bins: binmod.Binaries | None = None,
        crd_files: Iterable[Path] | None = None,
        nodes: int = 4,
        watch_cache: bool | None = None,
        audit_users: Sequence[str] = (),
        audit_groups: Sequence[str] = (),
        admission_plugins: Sequence[str] = (),
    ) -> None:
        if shape not in SHAPES:
            raise ValueError(f"shape must be one of {SHAPES}, not {shape!r}")
        self.workdir = workdir.resolve()
        self.shape = shape
        self.detached = detached
        self.nodes = nodes
        #: kube-apiserver's watch cache; off by default in the api shape so that
        #: :meth:`compact_etcd` makes every older resourceVersion expire at once.
        self.watch_cache = shape == FULL if watch_cache is None else watch_cache
        self._bins = bins
        self._crd_files = list(crd_files) if crd_files is not None else None
        self.kubeconfig = self.workdir / "kubeconfig"
        self.server = ""
        self.ports: dict[str, int] = {}
        self.processes: dict[str, Process] = {}
        self.pki = Pki(self.workdir / "pki")
        self._ssl: ssl.SSLContext | None = None
        #: Where to record the processes as soon as they start (``up``/``down``).
        self.state_path: Path | None = None
        self.audit_users = list(audit_users)
        self.audit_groups = list(audit_groups)
        self.admission_plugins = list(admission_plugins)
        #: The JSON audit log (one event a line), None unless someone is audited.
        self.audit_log: Path | None = (
            self.workdir / "audit.log" if self.audit_users or self.audit_groups else None
        )

    def __repr__(self) -> str:
        return f"LocalCluster(shape={self.shape!r}, server={self.server!r})"

    # -- paths and binaries

    @property
    def bins(self) -> binmod.Binaries:
        if self._bins is None:
            names = binmod.API_BINARIES if self.shape == API else binmod.FULL_BINARIES
            self._bins = binmod.find(names)
        return self._bins

    def crd_files(self) -> list[Path]:
        if self._crd_files is not None:
            return self._crd_files
        crd_dir = binmod.repo_root() / "crd"
        own = sorted(crd_dir.glob("*.yaml")) + sorted(crd_dir.glob("*.yml"))
        return own + self.bins.podgroup_crds

    # -- lifecycle

    def start(self) -> None:
        """Start everything and wait until it is ready; on failure stop it all and raise."""
        install_signal_handlers()
        with _live_lock:
            _live.add(self)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        if self.detached:  # outlives us: not stopped at exit
            with _live_lock:
                _live.discard(self)

    def _start(self) -> None:
        bins = self.bins
        self.workdir.mkdir(parents=True, exist_ok=True)
        generate(self.pki.dir)
        for attempt in range(3):
            etcd_client, etcd_peer, apiserver, kcm, sched = free_ports(5)
            self.ports = {
                "etcd": etcd_client,
                "etcd-peer": etcd_peer,
                "kube-apiserver": apiserver,
                "kube-controller-manager": kcm,
                "kube-scheduler": sched,
            }
            self.server = f"https://127.0.0.1:{apiserver}"
            self._write_kubeconfig()
            try:
                self._run("etcd", self._etcd_args(bins["etcd"]))
                self._wait_etcd()
                self._run("kube-apiserver", self._apiserver_args(bins["kube-apiserver"]))
                self._wait_apiserver()
                break
            except ClusterError as e:
                in_use = "address already in use" in str(e)
                self._stop_processes()
                shutil.rmtree(self.workdir / "etcd-data", ignore_errors=True)
                if not in_use or attempt == 2:
                    raise
        self.install_crds(self.crd_files())
        if self.shape == FULL:
            self._start_full(bins)

    def _start_full(self, bins: binmod.Binaries) -> None:
        kwok_config = self.workdir / "kwok.yaml"
        docs = [p.read_text() for p in sorted(STAGES_DIR.glob("*.yaml"))]
        kwok_config.write_text("\n---\n".join(docs))
        self._run("kube-controller-manager", self._kcm_args(bins["kube-controller-manager"]))
        self._run("kube-scheduler", self._scheduler_args(bins["kube-scheduler"]))
        self._run("kwok", self._kwok_args(bins["kwok"], kwok_config))
        for i in range(self.nodes):
            self.ensure(self._node(f"kwok-node-{i}"))
        self._wait("nodes Ready", self._nodes_ready)
        for component in ("kube-controller-manager", "kube-scheduler"):
            self._wait(f"{component} /healthz", functools.partial(self._healthz, component))
        self._wait(
            "ServiceAccount default/default (kube-controller-manager)",
            lambda: self._get("/api/v1/namespaces/default/serviceaccounts/default"),
        )

    def stop(self) -> None:
        """Stop every process (idempotent)."""
        self._stop_processes()
        with _live_lock:
            _live.discard(self)

    def _stop_processes(self) -> None:
        for name in reversed(list(self.processes)):
            self.processes[name].stop()
        self.processes.clear()

    def _run(self, name: str, args: list[str]) -> None:
        log = self.workdir / "logs" / f"{name}.log"
        p = Process(name, args, log, die_with_parent=not self.detached)
        self.processes[name] = p
        p.start()
        if self.state_path is not None:
            self.save_state(self.state_path)

    def alive(self) -> bool:
        return bool(self.processes) and all(p.alive() for p in self.processes.values())

    def stop_apiserver(self) -> None:
        self.processes["kube-apiserver"].stop()

    def start_apiserver(self) -> None:
        p = self.processes["kube-apiserver"]
        if p.alive():
            return
        p.start()
        if self.state_path is not None:
            self.save_state(self.state_path)
        self._wait_apiserver()

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port and etcd; wait ready."""
        self.stop_apiserver()
        self.start_apiserver()

    def compact_etcd(self) -> int:
        """Compact etcd at its current revision and return it.

        A watch from an older resourceVersion then gets 410 Gone ("too old resource
        version"). With the watch cache on (the full shape's default), kube-apiserver
        may still serve recent events from its cache: call :meth:`restart_apiserver`
        afterwards to drop it.
        """
        base = f"http://127.0.0.1:{self.ports['etcd']}/v3"
        key = base64.b64encode(b"/registry/").decode()
        rng = self._etcd_post(f"{base}/kv/range", {"key": key, "limit": 1})
        rev = int(rng["header"]["revision"])
        try:
            self._etcd_post(f"{base}/kv/compaction", {"revision": rev, "physical": True})
        except ClusterError as e:
            if "compacted" not in str(e):
                raise
        return rev

    # -- the audit log

    def audit_offset(self) -> int:
        """The audit log's current size: pass it to :meth:`audit_events` as ``start``."""
        if self.audit_log is None:
            raise ClusterError("this cluster audits nobody (no audit_users/audit_groups)")
        return self.audit_log.stat().st_size if self.audit_log.exists() else 0

    def audit_events(
        self, start: int = 0, end: int | None = None, user: str | None = None
    ) -> list[dict[str, Any]]:
        """The audit events written between two offsets of :attr:`audit_log` (from
        :meth:`audit_offset`), optionally only those of one user, in order."""
        if self.audit_log is None:
            raise ClusterError("this cluster audits nobody (no audit_users/audit_groups)")
        events = read_audit_events(self.audit_log, start, end)
        if user is None:
            return events
        return [e for e in events if audit_user(e) == user]

    # -- kubectl and REST

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
        path = _collection_path(obj)
        status, body = self.request("POST", path, obj)
        if status not in (200, 201, 409):
            raise ClusterError(f"creating {obj['kind']} {obj['metadata']['name']}: {status} {body}")

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
        if wait_for_sa if wait_for_sa is not None else self.shape == FULL:
            self._wait(
                f"ServiceAccount {name}/default",
                lambda: self._get(f"/api/v1/namespaces/{name}/serviceaccounts/default"),
                timeout=60,
            )
        return name

    def delete_namespace(self, name: str) -> None:
        self.request("DELETE", f"/api/v1/namespaces/{name}")

    # -- state for `up`/`down`

    def save_state(self, path: Path) -> None:
        state = {
            "shape": self.shape,
            "workdir": str(self.workdir),
            "server": self.server,
            "ports": self.ports,
            "processes": [p.to_state() for p in self.processes.values()],
        }
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(path)

    @classmethod
    def load_state(cls, path: Path) -> LocalCluster:
        state = json.loads(path.read_text())
        c = cls(Path(state["workdir"]), state["shape"], detached=True)
        c.server = state["server"]
        c.ports = {k: int(v) for k, v in state["ports"].items()}
        c.processes = {d["name"]: Process.from_state(d) for d in state["processes"]}
        return c

    # -- waiting and diagnostics

    def logs_tail(self, lines: int = 30) -> str:
        return "\n".join(
            f"---- {name} ({p.log}) ----\n{p.tail(lines)}" for name, p in self.processes.items()
        )

    def _wait(self, what: str, check: Callable[[], Any], timeout: float = START_TIMEOUT) -> Any:
        def checked() -> Any:
            for name, p in self.processes.items():
                if not p.alive():
                    raise _Dead(name)
            return check()

        try:
            return wait_for(checked, timeout, what)
        except _Dead as e:
            msg = f"{e.args[0]} exited while waiting for {what}"
            raise ClusterError(f"{msg}\n{self.logs_tail()}") from None
        except TimeoutError as e:
            raise ClusterError(f"{e}\n{self.logs_tail()}") from None

    def _wait_etcd(self) -> None:
        def healthy() -> bool:
            url = f"http://127.0.0.1:{self.ports['etcd']}/health"
            with urllib.request.urlopen(url, timeout=5) as r:
                return bool(json.loads(r.read()).get("health") == "true")

        self._wait("etcd /health", healthy, timeout=60)

    def _wait_apiserver(self) -> None:
        def ready() -> bool:
            status, _ = self.request("GET", "/readyz", timeout=5)
            return status == 200

        self._wait("kube-apiserver /readyz", ready)

    def _healthz(self, component: str) -> bool:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{self.ports[component]}/healthz"
        with urllib.request.urlopen(url, context=ctx, timeout=5) as r:
            return bool(r.status == 200)

    def _nodes_ready(self) -> bool:
        nodes = (self._get("/api/v1/nodes") or {}).get("items", [])
        ready = [
            n
            for n in nodes
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in n.get("status", {}).get("conditions", [])
            )
        ]
        return len(ready) >= self.nodes

    def _etcd_post(self, url: str, body: dict[str, Any]) -> Any:
        req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise ClusterError(f"etcd {url}: {e.code} {e.read().decode(errors='replace')}") from e

    # -- identities

    def cluster_admin_service_account(self, namespace: str, account: str) -> None:
        """Creates ``namespace`` (if missing) and a ServiceAccount bound to cluster-admin."""
        self.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        self.kubectl("-n", namespace, "create", "serviceaccount", account)
        self.kubectl(
            "create",
            "clusterrolebinding",
            f"{namespace}-{account}-admin",
            "--clusterrole=cluster-admin",
            f"--serviceaccount={namespace}:{account}",
        )

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

    # -- component configuration

    def _kubeconfig(self, user: str, credentials: dict[str, str]) -> dict[str, Any]:
        ca = base64.b64encode(self.pki.ca_crt.read_bytes()).decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "localcluster",
                    "cluster": {"server": self.server, "certificate-authority-data": ca},
                }
            ],
            "users": [{"name": user, "user": credentials}],
            "contexts": [
                {"name": "localcluster", "context": {"cluster": "localcluster", "user": user}}
            ],
            "current-context": "localcluster",
        }

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

    def _etcd_args(self, binary: Path) -> list[str]:
        client = f"http://127.0.0.1:{self.ports['etcd']}"
        peer = f"http://127.0.0.1:{self.ports['etcd-peer']}"
        return [
            str(binary),
            "--name=node0",
            f"--data-dir={self.workdir / 'etcd-data'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=node0={peer}",
            "--unsafe-no-fsync=true",
            "--quota-backend-bytes=4294967296",
            "--log-level=warn",
        ]

    def _apiserver_args(self, binary: Path) -> list[str]:
        args = [
            str(binary),
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.ports['kube-apiserver']}",
            f"--cert-dir={self.workdir / 'apiserver-certs'}",
            f"--tls-cert-file={self.pki.serving_crt}",
            f"--tls-private-key-file={self.pki.serving_key}",
            f"--client-ca-file={self.pki.ca_crt}",
            f"--service-account-issuer={SA_ISSUER}",
            f"--service-account-key-file={self.pki.sa_pub}",
            f"--service-account-signing-key-file={self.pki.sa_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            "--enable-priority-and-fairness=false",
            "--endpoint-reconciler-type=none",
            "--profiling=false",
        ]
        if not self.watch_cache:
            args.append("--watch-cache=false")
        if self.audit_log is not None:
            args += self._audit_args()
        if self.admission_plugins:
            args.append(f"--enable-admission-plugins={','.join(self.admission_plugins)}")
        if self.shape == API:
            # No controller manager creates the default ServiceAccounts (as envtest).
            args.append("--disable-admission-plugins=ServiceAccount")
        else:
            # No node-lifecycle controller would lift the not-ready taint this plugin
            # puts on new nodes; KWOK keeps the nodes Ready.
            args.append("--disable-admission-plugins=TaintNodesByCondition")
        return args

    def _audit_args(self) -> list[str]:
        assert self.audit_log is not None
        rules: list[dict[str, Any]] = []
        if self.audit_users:
            rules.append({"level": "Metadata", "users": self.audit_users})
        if self.audit_groups:
            rules.append({"level": "Metadata", "userGroups": self.audit_groups})
        policy = self.workdir / "audit-policy.yaml"
        policy.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "audit.k8s.io/v1",
                    "kind": "Policy",
                    "omitStages": ["RequestReceived", "ResponseStarted"],
                    "rules": [*rules, {"level": "None"}],
                }
            )
        )
        return [
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-maxsize=0",
            "--audit-log-format=json",
        ]

    def _component_common(self, component: str) -> list[str]:
        return [
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.ports[component]}",
            f"--cert-dir={self.workdir / (component + '-certs')}",
            "--leader-elect=false",
        ]

    def _kcm_args(self, binary: Path) -> list[str]:
        return [
            str(binary),
            *self._component_common("kube-controller-manager"),
            f"--controllers={','.join(KCM_CONTROLLERS)}",
            f"--service-account-private-key-file={self.pki.sa_key}",
            f"--root-ca-file={self.pki.ca_crt}",
            "--use-service-account-credentials=false",
            "--kube-api-qps=500",
            "--kube-api-burst=1000",
            "--concurrent-job-syncs=10",
        ]

    def _scheduler_args(self, binary: Path) -> list[str]:
        return [str(binary), *self._component_common("kube-scheduler")]

    def _kwok_args(self, binary: Path, config: Path) -> list[str]:
        return [
            str(binary),
            f"--kubeconfig={self.kubeconfig}",
            f"--config={config}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
            f"--cidr={POD_CIDR}",
            "--node-ip=10.240.0.1",
            "--node-lease-duration-seconds=40",
        ]

    def _node(self, name: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
                "labels": {
                    "kubernetes.io/arch": "amd64",
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/role": "agent",
                    "node-role.kubernetes.io/agent": "",
                    "type": "kwok",
                },
            },
            "spec": {},
            "status": {"capacity": dict(NODE_CAPACITY), "allocatable": dict(NODE_CAPACITY)},
        }


class _Dead(StopWaitingError):
    pass


def read_audit_events(path: Path, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
    """The JSON audit events of ``path`` between two byte offsets (a partly written
    last line is skipped)."""
    if not path.exists():
        return []
    with path.open("rb") as f:
        f.seek(start)
        data = f.read() if end is None else f.read(max(0, end - start))
    events: list[dict[str, Any]] = []
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def audit_user(event: dict[str, Any]) -> str:
    """The user an audit event was made by."""
    return str((event.get("user") or {}).get("username") or "")


def audit_code(event: dict[str, Any]) -> int:
    """The HTTP status an audited request was answered with (0 if not recorded)."""
    return int((event.get("responseStatus") or {}).get("code") or 0)


def _collection_path(obj: dict[str, Any]) -> str:
    api_version: str = obj["apiVersion"]
    kind: str = obj["kind"]
    plural = {
        "Node": "nodes",
        "Namespace": "namespaces",
        "CustomResourceDefinition": "customresourcedefinitions",
    }.get(kind)
    if plural is None:
        raise ValueError(f"unsupported kind {kind}")
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{prefix}/{plural}"
