"""The mpi-operator command as a process: kubeconfig errors and --version.

No cluster is needed: the process stops before it reaches an API server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from devcluster.testing import StartOperator

ROOT = Path(__file__).resolve().parents[3]


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("missing", None, "does not exist"),
        ("directory", "<dir>", "is a directory, not a file"),
        ("not-yaml", "a: [\n", "is not valid YAML at line 2"),
        ("no-context", "apiVersion: v1\nkind: Config\n", "sets no current-context"),
        (
            "no-cluster",
            "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n",
            "cannot be used: Invalid kube-config file. Expected object with name k",
        ),
    ],
)
def test_a_bad_kubeconfig_exits_1_naming_the_file(
    start_operator: StartOperator, tmp_path: Path, name: str, content: str | None, problem: str
) -> None:
    path = tmp_path / name
    if content == "<dir>":
        path.mkdir()
    elif content is not None:
        path.write_text(content)
    for args, env, origin in (
        ((f"--kubeConfig={path}",), None, "from --kubeConfig"),
        ((), {"KUBECONFIG": str(path)}, "from $KUBECONFIG"),
    ):
        proc = start_operator(*args, env=env)
        assert proc.wait(timeout=30) == 1
        out = proc.output()
        assert f"error building kube config: kubeconfig {path} ({origin})" in out, out
        assert problem in out, out
        assert "Traceback" not in out
        assert "Expected key current-context" not in out


def test_no_kubeconfig_at_all_names_the_default_path(
    start_operator: StartOperator, tmp_path: Path
) -> None:
    proc = start_operator(env={"HOME": str(tmp_path)})
    assert proc.wait(timeout=30) == 1
    out = proc.output()
    assert f"kubeconfig {tmp_path}/.kube/config (the default: none of --kubeConfig" in out
    assert "does not exist" in out and "Traceback" not in out


def test_version_from_a_checkout_names_its_commit() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mpi_operator.cmd", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    head = _git("rev-parse", "HEAD")
    lines = out.stdout.splitlines()
    sha = next(line for line in lines if line.startswith("Git SHA: "))
    assert sha in (f"Git SHA: {head}", f"Git SHA: {head}-dirty"), out.stdout
    assert lines[:2] == ["API Version: v2", "Version: v0.1.0"]


def test_a_built_wheel_carries_the_commit(tmp_path: Path) -> None:
    # Built from what the image's build context holds (no .git), in a copy, so that
    # setuptools' build/ directory stays out of the checkout.
    context = tmp_path / "context"
    context.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, context / name)
    shutil.copytree(
        ROOT / "mpi_operator",
        context / "mpi_operator",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    env = {
        **os.environ,
        "MPI_OPERATOR_GIT_COMMIT": "0123456789abcdef0123456789abcdef01234567",
        "SOURCE_DATE_EPOCH": "1700000000",
    }
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(tmp_path),
            str(context),
        ],
        env=env,
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("mpi_operator-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        info = json.loads(archive.read("mpi_operator/_build_info.json"))
    assert info == {
        "commit": "0123456789abcdef0123456789abcdef01234567",
        "built": "2023-11-14T22:13:20Z",
    }
    # Installed where no checkout is around it, --version reads the commit from the wheel.
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), wheel],
        check=True,
        timeout=300,
    )
    out = subprocess.run(
        [sys.executable, "-m", "mpi_operator.cmd", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert out.returncode == 0, out.stderr
    assert "Git SHA: 0123456789abcdef0123456789abcdef01234567" in out.stdout.splitlines()
    assert "Built: 2023-11-14T22:13:20Z" in out.stdout.splitlines()
