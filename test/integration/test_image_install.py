"""The image's install steps, in a clean virtualenv instead of a container (no
container builder runs on this machine): the Dockerfile's pip commands, in its order,
from the same lockfiles, then the console script and the server's import.

This checks that requirements.lock is complete (``--require-hashes`` refuses any
package it does not pin) and that the wheel needs nothing else. It needs the package
index (or pip's cache) and takes about a minute here (2 shared cores, warm cache)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import mpi_operator

ROOT = Path(__file__).resolve().parents[2]


def _run(*argv: str | Path, cwd: Path = ROOT) -> str:
    result = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, f"{argv}: {result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def test_lockfile_install_in_a_clean_virtualenv(tmp_path: Path) -> None:
    started = time.monotonic()
    build, runtime = tmp_path / "build", tmp_path / "runtime"
    for venv in (build, runtime):
        _run(sys.executable, "-m", "venv", venv)
    pip = ("-m", "pip", "install", "--disable-pip-version-check", "--quiet")
    # Builder stage: the build backend from its lockfile, then the wheel, offline.
    _run(build / "bin/python", *pip, "--require-hashes", "-r", ROOT / "requirements-build.lock")
    wheels = tmp_path / "wheels"
    _run(
        build / "bin/python",
        *("-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"),
        *("--wheel-dir", wheels, ROOT),
    )
    (wheel,) = wheels.glob("mpi_operator-*.whl")
    # Runtime stage: the locked dependencies with their hashes, the wheel without any.
    _run(runtime / "bin/python", *pip, "--require-hashes", "-r", ROOT / "requirements.lock")
    _run(runtime / "bin/python", *pip, "--no-deps", wheel)
    _run(runtime / "bin/python", "-m", "pip", "check")
    version = _run(runtime / "bin/mpi-operator", "--version", cwd=tmp_path)
    assert mpi_operator.__version__ in version
    # The whole process imports (server, both controllers), and nothing of dev/sdk is there.
    _run(
        runtime / "bin/python",
        "-c",
        "import mpi_operator.server.app, mpi_operator.controller.t9k.controller\n"
        "import importlib.util as u\n"
        "assert u.find_spec('kubernetes') is None, 'the sync client is not a runtime dependency'\n"
        "assert u.find_spec('devcluster') is None\n",
        cwd=tmp_path,
    )
    installed = _run(runtime / "bin/python", "-m", "pip", "list", "--format=freeze")
    locked = {
        line.split("==")[0].lower()
        for line in (ROOT / "requirements.lock").read_text().splitlines()
        if "==" in line and not line.startswith(" ")
    }
    names = {line.split("==")[0].lower().replace("_", "-") for line in installed.splitlines()}
    assert names - locked <= {"mpi-operator", "pip", "setuptools"}
    print(f"lockfile install in a clean virtualenv: {time.monotonic() - started:.1f}s")


def test_make_lock_reproduces_the_committed_lockfiles(tmp_path: Path) -> None:
    """`make lock`, run on a copy of pyproject.toml with the committed lockfiles as the
    starting point (uv keeps their pins when they still satisfy pyproject), changes
    nothing: the committed files are what the tool generates, with hashes."""
    for name in ("Makefile", "pyproject.toml", "requirements.lock", "requirements-build.lock"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    bin_dir = Path(sys.executable).parent
    _run("make", "-s", "-o", "venv", "lock", f"BIN={bin_dir}", cwd=tmp_path)
    for name in ("requirements.lock", "requirements-build.lock"):
        assert (tmp_path / name).read_text() == (ROOT / name).read_text(), name
