"""Independent API calls of one sync, issued at once.

A sync worker waits on every round trip it makes in series, so with two workers
those round trips, not the client's token bucket, bound how many MPIJobs per
second the operator gets through once the API server slows down. The Service,
ConfigMap and SSH Secret of a job do not depend on each other, nor do the
deletions of its worker pods, so each group costs one round trip.

Unlike a bare :func:`asyncio.gather`, :func:`run_all` lets every call finish
before it raises, so no write is left running unobserved after a sync failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TypeVar

T = TypeVar("T")


def first_error(results: Sequence[object]) -> BaseException | None:
    """The first exception among ``asyncio.gather(..., return_exceptions=True)``'s results."""
    for result in results:
        if isinstance(result, BaseException):
            return result
    return None


async def run_all(*calls: Awaitable[T]) -> list[T]:
    """Await ``calls`` concurrently; once all are done, raise the first error in
    argument order, or return the results in that order."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    error = first_error(results)
    if error is not None:
        raise error
    return [r for r in results if not isinstance(r, BaseException)]
