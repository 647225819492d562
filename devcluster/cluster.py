"""A local Kubernetes control plane made of real binaries (see the package docstring)."""

from __future__ import annotations

import functools
import json
import shutil
import ssl
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from . import binaries as binmod
from . import components, etcd_http, teardown
from .access import API, FULL, REAL, START_TIMEOUT, ClusterAccess, ClusterError
from .audit import audit_args, audit_user, read_audit_events
from .pki import Pki, generate
from .procs import Process, free_ports
from .realnode import RealNode, preflight
from .waiting import StopWaitingError, wait_for

SHAPES = (API, FULL, REAL)
#: Seconds kube-apiserver gets after SIGTERM before SIGKILL when a test stops it
#: (``stop_apiserver``, ``restart_apiserver``). It stops listening at once, then drains
#: the connections its clients hold open (the controllers' and the operator's watches),
#: which here outlasted the 10 s a process is otherwise given: each restart with clients
#: connected spent 10 s on a server that no new connection could reach.
APISERVER_STOP_GRACE = 2.0
STAGES_DIR = Path(__file__).parent / "stages"


#: Every start of a cluster in this process, (shape, seconds): the test suite's
#: summary counts them (test/conftest.py).
STARTS: list[tuple[str, float]] = []


class LocalCluster(ClusterAccess):
    """etcd + kube-apiserver (shape ``api``), plus kube-controller-manager, kube-scheduler
    and a KWOK controller with fake nodes (shape ``full``), all on 127.0.0.1; plus one
    real node, containerd + kubelet + bridge CNI + CoreDNS + kube-proxy (shape ``real``, root
    only).

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
        workload_api: bool = False,
    ) -> None:
        if shape not in SHAPES:
            raise ValueError(f"shape must be one of {SHAPES}, not {shape!r}")
        self.workdir = workdir.resolve()
        self.shape = shape
        self.detached = detached
        self.nodes = nodes
        #: kube-apiserver's watch cache; off by default in the api shape so that
        #: :meth:`compact_etcd` makes every older resourceVersion expire at once.
        self.watch_cache = shape != API if watch_cache is None else watch_cache
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
        #: The Workload API (scheduling.k8s.io/v1alpha2 PodGroups) and the scheduler's
        #: gang scheduling; the pods are placed only in the full and real shapes.
        self.workload_api = workload_api
        #: The JSON audit log (one event a line), None unless someone is audited.
        self.audit_log: Path | None = (
            self.workdir / "audit.log" if self.audit_users or self.audit_groups else None
        )
        #: The real node (shape ``real``), made at start.
        self.node: RealNode | None = None

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
        teardown.install_signal_handlers()
        teardown.track(self)
        began = time.monotonic()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        finally:
            STARTS.append((self.shape, time.monotonic() - began))
        if self.detached:  # outlives us: not stopped at exit
            teardown.untrack(self)

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
                self._run("etcd", components.etcd_args(bins["etcd"], self._layout()))
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
        if self.shape != API:
            self._start_full(bins)
        if self.shape == REAL:
            self._start_node()

    def _start_node(self) -> None:
        inputs = preflight()
        ports = tuple(free_ports(5))  # kubelet, its healthz, CoreDNS ready, kube-proxy's two
        self.node = RealNode(self.workdir, ports, self.kubeconfig)
        self.node.start(inputs, self.pki.ca_crt, self._run, self._wait)
        self._wait("the real node Ready", self._nodes_ready)

    def _start_full(self, bins: binmod.Binaries) -> None:
        kwok_config = self.workdir / "kwok.yaml"
        docs = [p.read_text() for p in sorted(STAGES_DIR.glob("*.yaml"))]
        kwok_config.write_text("\n---\n".join(docs))
        layout = self._layout()
        kcm = components.controller_manager_args(
            bins["kube-controller-manager"],
            layout,
            endpoints=self.shape == REAL,
            workload_api=self.workload_api,
        )
        self._run("kube-controller-manager", kcm)
        scheduler = components.scheduler_args(
            bins["kube-scheduler"], layout, workload_api=self.workload_api
        )
        self._run("kube-scheduler", scheduler)
        self._run("kwok", components.kwok_args(bins["kwok"], layout, kwok_config))
        for i in range(self.nodes):
            self.ensure(components.fake_node(f"kwok-node-{i}"))
        self._wait("nodes Ready", self._nodes_ready)
        for component in ("kube-controller-manager", "kube-scheduler"):
            self._wait(f"{component} /healthz", functools.partial(self._healthz, component))
        self._wait(
            "ServiceAccount default/default (kube-controller-manager)",
            lambda: self._get("/api/v1/namespaces/default/serviceaccounts/default"),
        )

    def stop(self) -> None:
        """Stop every process (idempotent); the real node's containers first, and what
        is left of them (mounts, bridge, shims) after."""
        node = self.node
        if node is None and self.shape == REAL:
            node = RealNode(self.workdir, (0, 0, 0), self.kubeconfig)
        if node is not None and "containerd" in self.processes:
            if "kubelet" in self.processes:  # else it would restart what is killed
                self.processes["kubelet"].stop()
            node.kill_containers()
        self._stop_processes()
        if node is not None:
            node.cleanup()
        teardown.untrack(self)

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
        """SIGTERM kube-apiserver; SIGKILL after :data:`APISERVER_STOP_GRACE` seconds."""
        self.processes["kube-apiserver"].stop(timeout=APISERVER_STOP_GRACE)

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
        return etcd_http.compact(self.ports["etcd"])

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
        self._wait("etcd /health", lambda: etcd_http.healthy(self.ports["etcd"]), timeout=60)

    def _wait_apiserver(self) -> None:
        def ready() -> bool:
            status, _ = self.request("GET", "/readyz", timeout=5)
            return status == 200

        self._wait("kube-apiserver /readyz", ready)

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
        return len(ready) >= self.nodes + (1 if self.node is not None else 0)

    # -- component configuration

    def _layout(self) -> components.Layout:
        return components.Layout(self.workdir, self.pki, self.kubeconfig, dict(self.ports))

    def _apiserver_args(self, binary: Path) -> list[str]:
        extra: list[str] = []
        if self.audit_log is not None:
            policy = self.workdir / "audit-policy.yaml"
            extra = audit_args(policy, self.audit_log, self.audit_users, self.audit_groups)
        if self.workload_api:
            extra += components.WORKLOAD_API_APISERVER
        return components.apiserver_args(
            binary,
            self._layout(),
            full=self.shape != API,
            kubelet_client=self.shape == REAL,
            pod_reachable_at=RealNode.gateway_of(self.workdir) if self.shape == REAL else None,
            watch_cache=self.watch_cache,
            admission_plugins=self.admission_plugins,
            extra=extra,
        )


class _Dead(StopWaitingError):
    pass
