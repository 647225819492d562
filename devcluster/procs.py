"""Component processes: each in its own process group, logs to a file, always killed."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def free_ports(n: int) -> list[int]:
    """``n`` distinct free loopback TCP ports (held together while choosing them)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def pid_start_time(pid: int) -> str:
    """The start time of ``pid`` in clock ticks since boot (identifies it with the pid)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[19]
    except (OSError, IndexError):
        return ""


def kill_group(
    pid: int, timeout: float = 10.0, popen: subprocess.Popen[bytes] | None = None
) -> None:
    """SIGTERM the process group led by ``pid``, SIGKILL it after ``timeout`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + (timeout if sig == signal.SIGTERM else 10.0)
        while time.monotonic() < deadline:
            if popen is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    popen.wait(timeout=0.05)
            if not pid_alive(pid) and not _group_alive(pid):
                return
            time.sleep(0.05)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Members may all be zombies awaiting their reaper: check them.
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


@dataclass
class Process:
    """One component: ``args[0]`` is the binary. Started with :meth:`start`."""

    name: str
    args: list[str]
    log: Path
    die_with_parent: bool = True
    env: dict[str, str] | None = None
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    pid: int | None = None
    start_time: str = ""

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            banner = f"==== {time.strftime('%H:%M:%S')} starting: {' '.join(self.args)}\n"
            out.write(banner.encode())
            out.flush()
            self.popen = subprocess.Popen(
                self.args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                # PR_SET_PDEATHSIG fires when the *thread* that forked exits: only
                # from the main thread (elsewhere, stop()/atexit still apply).
                preexec_fn=die_with_parent
                if self.die_with_parent and threading.current_thread() is threading.main_thread()
                else None,
                env=self.env,
            )
        self.pid = self.popen.pid
        self.start_time = pid_start_time(self.pid)

    def alive(self) -> bool:
        if self.pid is None:
            return False
        if self.popen is not None:
            return self.popen.poll() is None
        return pid_alive(self.pid) and self.is_ours()

    def is_ours(self) -> bool:
        """Whether ``pid`` still is this component (not a recycled pid)."""
        if self.pid is None:
            return False
        return not self.start_time or pid_start_time(self.pid) == self.start_time

    def stop(self, timeout: float = 10.0) -> None:
        if self.pid is None:
            return
        if self.popen is not None or self.is_ours():
            kill_group(self.pid, timeout, self.popen)
        self.popen = None
        self.pid = None

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return f"(no log at {self.log})"
        return "\n".join(text[-lines:])

    def to_state(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "args": self.args,
            "log": str(self.log),
            "pid": self.pid,
            "start_time": self.start_time,
        }

    @classmethod
    def from_state(cls, d: dict[str, Any]) -> Process:
        return cls(
            name=d["name"],
            args=list(d["args"]),
            log=Path(d["log"]),
            die_with_parent=False,
            pid=d.get("pid"),
            start_time=d.get("start_time", ""),
        )
