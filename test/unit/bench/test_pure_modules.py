"""The bench modules that only read records start no cluster code: a report or a
comparison runs on a machine without the cluster's binaries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("module", ["summary", "report", "compare", "bounds", "charts"])
def test_reading_records_does_not_import_the_cluster(module: str) -> None:
    code = f"import sys, bench.sidebyside.{module}; print('devcluster' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
