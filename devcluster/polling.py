"""Helpers for tests that drive the client machinery against a real cluster."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def eventually(
    check: Callable[[], bool] | Callable[[], Awaitable[bool]],
    within: float = 15.0,
    interval: float = 0.05,
    what: str = "condition",
) -> None:
    """Poll ``check`` (plain or async) until it is true; fail after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        await asyncio.sleep(interval)
