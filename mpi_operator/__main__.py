"""``python -m mpi_operator``: the operator, as the ``mpi-operator`` command runs it."""

from __future__ import annotations

import sys

from mpi_operator.cmd import main

if __name__ == "__main__":
    sys.exit(main())
