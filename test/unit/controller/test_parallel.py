"""run_all: independent calls of one sync run at once, and none is left behind on error."""

from __future__ import annotations

import asyncio

import pytest

from mpi_operator.controller.core.parallel import first_error, run_all


async def test_calls_overlap_and_results_keep_argument_order() -> None:
    running = 0
    peak = 0

    async def call(value: int, delay: float) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(delay)
        running -= 1
        return value

    assert await run_all(call(1, 0.03), call(2, 0.01), call(3, 0.02)) == [1, 2, 3]
    assert peak == 3


async def test_every_call_finishes_before_the_first_error_is_raised() -> None:
    finished: list[str] = []

    async def fails(name: str, delay: float) -> str:
        await asyncio.sleep(delay)
        finished.append(name)
        raise RuntimeError(name)

    async def succeeds(name: str, delay: float) -> str:
        await asyncio.sleep(delay)
        finished.append(name)
        return name

    with pytest.raises(RuntimeError, match=r"^first$"):
        await run_all(succeeds("slow", 0.05), fails("first", 0.02), fails("second", 0.0))
    assert sorted(finished) == ["first", "second", "slow"]


async def test_no_calls_is_no_results() -> None:
    assert await run_all() == []


@pytest.mark.parametrize(
    ("results", "expected"),
    [
        ([], None),
        ([1, "a", None], None),
        ([1, KeyError("k"), ValueError("v")], "k"),
    ],
)
def test_first_error(results: list[object], expected: str | None) -> None:
    error = first_error(results)
    assert (None if error is None else error.args[0]) == expected
