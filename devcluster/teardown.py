"""Stop every started cluster when this process exits or gets SIGTERM/SIGHUP."""

from __future__ import annotations

import atexit
import contextlib
import signal
import threading
from types import FrameType
from typing import Protocol


class Stoppable(Protocol):
    def stop(self) -> None: ...


_live: set[Stoppable] = set()
_live_lock = threading.Lock()


def track(cluster: Stoppable) -> None:
    """Stop ``cluster`` at exit unless :func:`untrack` is called first."""
    with _live_lock:
        _live.add(cluster)


def untrack(cluster: Stoppable) -> None:
    with _live_lock:
        _live.discard(cluster)


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
