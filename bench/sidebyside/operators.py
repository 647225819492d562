"""The two operators under test, run out of cluster one at a time.

* ``ours``: ``.venv/bin/mpi-operator`` (this repository).
* ``reference``: kubeflow/mpi-operator v0.8.2 built by
  ``hack/install-reference-operator.sh`` into the user cache (never the checkout).

Both get the same token kubeconfig (:mod:`bench.sidebyside.cluster`), the same
``--kube-api-qps``/``--kube-api-burst`` and otherwise their shipped defaults. The
reference always serves its health check on :8080 (hard-coded); ours gets a free port.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from devcluster import wait_for
from devcluster.procs import Process, free_ports
from devcluster.waiting import StopWaitingError

from .cluster import BenchCluster
from .machine import cpu_seconds

REPO = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = REPO / "hack" / "install-reference-operator.sh"
OURS = "ours"
REFERENCE = "reference"
OPERATORS = (OURS, REFERENCE)
#: Log lines each operator writes once its informers synced and its workers run.
READY_MARKERS = {OURS: b"controller started", REFERENCE: b"Started workers"}
REFERENCE_HEALTH_PORT = 8080


def reference_binary() -> Path:
    """Path of the reference binary, installing it first when missing (needs Go)."""
    out = subprocess.run(
        ["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=1800
    )
    if out.returncode != 0:
        raise RuntimeError(f"{INSTALL_SCRIPT.name} failed: {out.stderr.strip()}")
    return Path(out.stdout.strip().splitlines()[-1])


def ours_binary() -> Path:
    exe = Path(sys.executable).parent / "mpi-operator"
    if not exe.exists():
        raise RuntimeError(f"{exe} missing: pip install -e . in the venv")
    return exe


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


@dataclass
class ProcStats:
    """Peak RSS (VmHWM) and CPU seconds (utime+stime) of one process, from /proc."""

    hwm_kib: int
    cpu_seconds: float


def proc_stats(pid: int) -> ProcStats:
    hwm = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    cpu = cpu_seconds(pid)
    if cpu is None:
        raise ProcessLookupError(f"process {pid} is gone")
    return ProcStats(hwm, cpu)


class RunningOperator:
    """One operator process: :meth:`start` waits until it leads with synced caches."""

    def __init__(
        self,
        kind: str,
        cluster: BenchCluster,
        binary: Path,
        log: Path,
        qps: int | None = None,
        burst: int | None = None,
        extra_args: tuple[str, ...] = (),
        profile_to: Path | None = None,
    ) -> None:
        self.kind = kind
        #: A py-spy flame graph of the run goes here (ours only: py-spy reads Python).
        self.profile_to = profile_to
        self._profiler: subprocess.Popen[bytes] | None = None
        self.cluster = cluster
        args = [str(binary), "--kubeConfig", str(cluster.operator_kubeconfig)]
        if qps is not None:
            args += ["--kube-api-qps", str(qps)]
        if burst is not None:
            args += ["--kube-api-burst", str(burst)]
        args += extra_args
        if kind == OURS:
            (health,) = free_ports(1)
            args += ["--healthz-port", str(health), "--healthz-bind-address", "127.0.0.1"]
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        self.proc = Process(f"{kind}-operator", args, log, env=env)
        self.log = log
        self.start_seconds = 0.0

    @property
    def pid(self) -> int:
        assert self.proc.pid is not None
        return self.proc.pid

    def start(self, timeout: float = 180.0) -> None:
        self.cluster.delete_lease()
        if self.kind == REFERENCE:
            wait_for(
                lambda: _port_free(REFERENCE_HEALTH_PORT),
                60,
                f"port {REFERENCE_HEALTH_PORT} free (the reference's fixed health port)",
                interval=0.5,
            )
        offset = self.log.stat().st_size if self.log.exists() else 0
        t0 = time.monotonic()
        self.proc.start()
        marker = READY_MARKERS[self.kind]

        def ready() -> bool:
            if not self.proc.alive():
                raise _Died(f"{self.kind} operator exited:\n{self.proc.tail(30)}")
            with self.log.open("rb") as f:
                f.seek(offset)
                return marker in f.read()

        try:
            wait_for(ready, timeout, f"{self.kind} operator ready", interval=0.1)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        if self.profile_to is not None:
            self.profile_to.parent.mkdir(parents=True, exist_ok=True)
            py_spy = str(Path(sys.executable).with_name("py-spy"))
            self._profiler = subprocess.Popen(
                [
                    py_spy,
                    "record",
                    "--pid",
                    str(self.pid),
                    "--rate",
                    "100",
                    "--nonblocking",
                    "--output",
                    str(self.profile_to),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )

    def stats(self) -> ProcStats:
        return proc_stats(self.pid)

    def check_alive(self) -> None:
        if not self.proc.alive():
            raise RuntimeError(f"{self.kind} operator exited:\n{self.proc.tail(30)}")

    def stop(self) -> None:
        if self._profiler is not None:
            # py-spy writes its flame graph when interrupted.
            self._profiler.send_signal(signal.SIGINT)
            try:
                self._profiler.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._profiler.kill()
            self._profiler = None
        self.proc.stop(timeout=10.0)
        self.cluster.delete_lease()


class _Died(StopWaitingError):
    """The operator exited while we waited for it (ends the wait at once)."""
