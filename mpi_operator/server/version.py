"""What ``--version`` prints: the API and package versions, the git commit, the build time.

The commit comes from git itself when the package runs from a checkout (so it
is never stale there), else from ``_build_info.json``, which the build hook in
``setup.py`` writes into the wheel (from git, or from
``$MPI_OPERATOR_GIT_COMMIT`` where the build has no ``.git``, as in the image's
build stage). This module uses the standard library only: ``setup.py`` imports it.
"""

from __future__ import annotations

import datetime
import functools
import importlib.resources
import json
import platform
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mpi_operator import __version__

API_VERSION = "v2"
BUILD_INFO_FILE = "_build_info.json"
COMMIT_ENV = "MPI_OPERATOR_GIT_COMMIT"
NOT_PROVIDED = "Not provided."
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
"""The directory holding the ``mpi_operator`` package: a checkout's root, or site-packages."""


@dataclass(frozen=True, slots=True)
class BuildInfo:
    commit: str = ""
    built: str = ""


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def checkout_commit(root: Path) -> str:
    """HEAD of the git checkout at ``root`` (``-dirty`` with uncommitted changes), or ""."""
    if not (root / ".git").exists():
        return ""
    commit = _git(root, "rev-parse", "HEAD")
    if not commit:
        return ""
    if _git(root, "status", "--porcelain", "--untracked-files=no"):
        commit += "-dirty"
    return commit


def build_time(environ: Mapping[str, str]) -> str:
    """``$SOURCE_DATE_EPOCH`` (reproducible builds) or now, in UTC."""
    epoch = environ.get("SOURCE_DATE_EPOCH")
    when = (
        datetime.datetime.fromtimestamp(int(epoch), datetime.UTC)
        if epoch
        else datetime.datetime.now(datetime.UTC)
    )
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _packaged() -> BuildInfo:
    try:
        text = importlib.resources.files("mpi_operator").joinpath(BUILD_INFO_FILE).read_text()
        data = json.loads(text)
    except (OSError, ValueError):
        return BuildInfo()
    return BuildInfo(str(data.get("commit") or ""), str(data.get("built") or ""))


@functools.cache
def build_info() -> BuildInfo:
    """Runs git once per process at most (call it before the event loop starts)."""
    commit = checkout_commit(PACKAGE_ROOT)
    return BuildInfo(commit) if commit else _packaged()


def version_lines() -> list[str]:
    info = build_info()
    return [
        f"API Version: {API_VERSION}",
        f"Version: v{__version__}",
        f"Git SHA: {info.commit or NOT_PROVIDED}",
        f"Built: {info.built or NOT_PROVIDED}",
        f"Python Version: {platform.python_version()}",
        f"OS/Arch: {sys.platform}/{platform.machine()}",
    ]
