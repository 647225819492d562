"""Test helpers: run ``mpi-operator`` as a real subprocess and observe it.

Used by the integration and end-to-end suites; synchronous on purpose (the
tests drive processes and poll HTTP endpoints, they run no event loop).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from devcluster.procs import die_with_parent, free_ports

_SCRUBBED_ENV = ("KUBECONFIG", "KUBEFLOW_NAMESPACE", "KUBERNETES_SERVICE_HOST")


def free_port() -> int:
    return free_ports(1)[0]


#: Every operator process started in this process (its log's name): counted in the
#: test suite's summary (test/conftest.py).
OPERATOR_STARTS: list[str] = []


class OperatorProcess:
    """One ``python -m mpi_operator.cmd`` child with loopback healthz and metrics ports."""

    def __init__(
        self,
        args: Sequence[str],
        log_path: Path,
        *,
        env: dict[str, str] | None = None,
        healthz_port: int | None = None,
        monitoring_port: int | None = None,
    ) -> None:
        # Chosen together: two separate picks can return the same port (seen in CI:
        # healthz and metrics on one port, the operator exited on EADDRINUSE).
        picked = iter(free_ports(2))
        self.healthz_port = healthz_port or next(picked)
        self.monitoring_port = monitoring_port or next(picked)
        self.log_path = log_path
        self.argv = [
            sys.executable,
            "-m",
            "mpi_operator.cmd",
            "--healthz-bind-address=127.0.0.1",
            f"--healthz-port={self.healthz_port}",
            "--monitoring-bind-address=127.0.0.1",
            f"--monitoring-port={self.monitoring_port}",
            *args,
        ]
        base = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
        self.env = {**base, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> OperatorProcess:
        OPERATOR_STARTS.append(self.log_path.name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                preexec_fn=die_with_parent,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def poll(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def signal(self, sig: signal.Signals) -> None:
        if self.poll() is None:
            assert self.proc is not None
            self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL and reap (idempotent); for teardown."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)

    # -- output ----------------------------------------------------------------
    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def records(self) -> Iterator[dict[str, Any]]:
        """The JSON log records written so far (other lines skipped)."""
        for line in self.output().splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict):
                    yield record

    def identity(self) -> str | None:
        for record in self.records():
            if record.get("event") == "starting mpi-operator":
                ident = record.get("identity")
                return ident if isinstance(ident, str) else None
        return None

    # -- HTTP --------------------------------------------------------------------
    def _get(self, port: int, path: str) -> tuple[int, str]:
        url = f"http://127.0.0.1:{port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def healthz(self) -> tuple[int, str]:
        return self._get(self.healthz_port, "/healthz")

    def metrics(self) -> str:
        status, body = self._get(self.monitoring_port, "/metrics")
        if status != 200:
            raise RuntimeError(f"/metrics answered {status}")
        return body


def wait_until(check: Any, timeout: float, what: str, interval: float = 0.2) -> Any:
    """Polls ``check()`` until it returns a truthy value, else raises TimeoutError."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            result = check()
            if result:
                return result
        except Exception as err:
            last = err
        if time.monotonic() >= deadline:
            detail = f" (last error: {last!r})" if last else ""
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)


#: A test fixture's function that starts operator processes (``start(*args, env=...)``).
StartOperator = Callable[..., OperatorProcess]
