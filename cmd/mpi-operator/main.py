"""Runs the operator from a source checkout: ``python cmd/mpi-operator/main.py --help``."""

from __future__ import annotations

import sys
from pathlib import Path


def _run() -> int:
    root = Path(__file__).resolve().parents[2]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from mpi_operator.cmd import main

    return main()


if __name__ == "__main__":
    sys.exit(_run())
