"""The operator as a child process of ``make demo``: started on free loopback ports
against a kubeconfig, watching one namespace; killed with its parent."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .procs import die_with_parent, free_ports


def operator_command() -> list[str]:
    """The installed ``mpi-operator`` console script next to this interpreter."""
    script = Path(sys.executable).parent / "mpi-operator"
    if script.is_file():
        return [str(script)]
    found = shutil.which("mpi-operator")
    return [found] if found else [sys.executable, "-m", "mpi_operator.cmd"]


@dataclass
class Operator:
    kubeconfig: Path
    namespace: str
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    metrics_port: int = 0

    def start(self) -> None:
        healthz_port, self.metrics_port = free_ports(2)
        argv = [
            *operator_command(),
            f"--kubeConfig={self.kubeconfig}",
            f"--namespace={self.namespace}",
            f"--lock-namespace={self.namespace}",
            "--healthz-bind-address=127.0.0.1",
            f"--healthz-port={healthz_port}",
            "--monitoring-bind-address=127.0.0.1",
            f"--monitoring-port={self.metrics_port}",
            "--log-format=console",
        ]
        env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBEFLOW_NAMESPACE")}
        with self.log_path.open("ab") as out:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=die_with_parent,
            )

    def exited(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def leading(self) -> bool:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return "mpi_operator_is_leader 1.0" in resp.read().decode()
        except (OSError, urllib.error.URLError):
            return False

    def stop(self) -> None:
        """SIGTERM (the operator releases its Lease), then SIGKILL after 15s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def log_tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""
