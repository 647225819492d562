"""Console entry point of the `mpi-operator` command.

The operator process itself arrives with the controller; until then the
command answers `--version` so that the packaging can be checked.
"""

from __future__ import annotations

import argparse
import sys

from mpi_operator import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mpi-operator", description=__doc__)
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    args = parser.parse_args(argv)
    if args.version:
        print(f"mpi-operator {__version__}")
        return 0
    parser.error("the controller is not part of this release yet; try --version")
    return 2


if __name__ == "__main__":
    sys.exit(main())
