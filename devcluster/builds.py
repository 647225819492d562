"""Builds that ``make test`` runs beside the cluster suites (``hack/test.sh``).

The cluster suites start as soon as the control plane's binaries are built; Kueue, the
real node's binaries, packages and images, Open MPI and the operator's image go on
building in the background (cold, that is most of the build time). Each background
build, when it ends, leaves ``<target>.done`` or ``<target>.failed`` in the directory
``$MPI_OPERATOR_BUILDS_DIR`` names, and a test that needs one waits for it here first.
Without that variable (a plain ``pytest``, ``make demo``) nothing is waited for: the
build is expected to be there, and its absence is reported as before.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

BUILDS_DIR_ENV = "MPI_OPERATOR_BUILDS_DIR"
#: The longest a test waits for a build: a cold Kueue build on two busy cores.
BUILD_TIMEOUT = 45 * 60.0


class BuildFailedError(RuntimeError):
    """A build ``make test`` ran beside the suites failed, or did not end in time."""


def wait_for(target: str, timeout: float = BUILD_TIMEOUT, poll: float = 2.0) -> None:
    """Returns once ``make <target>`` has been built by ``make test`` (at once when it was,
    or when no build runs beside this test run); raises :class:`BuildFailedError` when it
    failed or has not ended within ``timeout`` seconds."""
    directory = os.environ.get(BUILDS_DIR_ENV)
    if not directory:
        return
    done, failed = Path(directory) / f"{target}.done", Path(directory) / f"{target}.failed"
    deadline = time.monotonic() + timeout
    told = False
    while not done.exists():
        if failed.exists():
            raise BuildFailedError(f"`make {target}` failed beside the tests: see its lane's lines")
        if time.monotonic() > deadline:
            raise BuildFailedError(f"`make {target}` did not end within {timeout:.0f} s")
        if not told:
            print(f"waiting for `make {target}`, building beside the tests", file=sys.stderr)
            told = True
        time.sleep(poll)
