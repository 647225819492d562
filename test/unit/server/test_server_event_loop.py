"""The ``mpi-operator`` command runs the operator on uvloop's event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest
import uvloop

from mpi_operator import cmd
from mpi_operator.server.options import ServerOptions


def test_the_operator_runs_on_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def fake_operator(opts: ServerOptions, env: Mapping[str, str]) -> int:
        loops.append(asyncio.get_running_loop())
        return 0

    monkeypatch.setattr(cmd, "run_operator", fake_operator)
    monkeypatch.setattr(cmd, "configure_logging", lambda *_: None)
    assert cmd.main([], {}) == 0
    assert len(loops) == 1 and isinstance(loops[0], uvloop.Loop)
    assert loops[0].is_closed()
