"""Polling with a deadline, for starting the control plane and for tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


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
