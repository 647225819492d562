"""Build hook: the wheel carries the git commit it was built from.

Everything else is declared in pyproject.toml. ``build_py`` writes
``mpi_operator/_build_info.json`` (commit and build time) into the wheel; the
commit comes from ``$MPI_OPERATOR_GIT_COMMIT`` when set (a build without
``.git``, as the image's), else from git. ``mpi-operator --version`` prints it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from mpi_operator.server.version import (  # noqa: E402
    BUILD_INFO_FILE,
    COMMIT_ENV,
    build_time,
    checkout_commit,
)


class BuildPyWithBuildInfo(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads git at run time
            return
        info = {
            "commit": os.environ.get(COMMIT_ENV) or checkout_commit(ROOT),
            "built": build_time(os.environ),
        }
        target = Path(self.build_lib) / "mpi_operator" / BUILD_INFO_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(info) + "\n")


setup(cmdclass={"build_py": BuildPyWithBuildInfo})
