"""Every way to start the operator reaches the same main()."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CONSOLE_SCRIPT = Path(sys.executable).parent / "mpi-operator"


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, "-m", "mpi_operator.cmd", "--version"],
        [sys.executable, "-m", "mpi_operator", "--version"],
        [sys.executable, str(ROOT / "cmd" / "mpi-operator" / "main.py"), "-version"],
        pytest.param(
            [str(CONSOLE_SCRIPT), "--version"],
            marks=pytest.mark.skipif(not CONSOLE_SCRIPT.exists(), reason="not installed"),
        ),
    ],
)
def test_version_from_every_entry_point(argv: list[str]) -> None:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "API Version: v2" in out.stdout


def test_usage_error_exits_2() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mpi_operator.cmd", "--threadiness=x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "--threadiness" in out.stderr
