"""Fixtures for running the mpi-operator process against the real local API server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devcluster.testing import OperatorProcess, StartOperator


@pytest.fixture
def start_operator(tmp_path: Path) -> Iterator[StartOperator]:
    """Starts operator processes; every one is SIGKILLed at teardown if still running."""
    started: list[OperatorProcess] = []

    def start(*args: str, env: dict[str, str] | None = None) -> OperatorProcess:
        proc = OperatorProcess(args, tmp_path / f"operator-{len(started)}.log", env=env)
        started.append(proc)
        return proc.start()

    try:
        yield start
    finally:
        for proc in started:
            proc.kill()
        for proc in started:
            print(f"--- {proc.log_path.name} (exit {proc.poll()}) ---\n{proc.output()[-4000:]}")
