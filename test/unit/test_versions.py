"""The release's version is written once (mpi_operator/__init__.py) and every other place
reads it: the package's metadata, make (the image tag), the Helm chart, the manifests and
--version, which also names the commit and does not fail without git. CHANGELOG.md's
latest release is that version."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

import mpi_operator
from mpi_operator.server import version

ROOT = Path(__file__).resolve().parents[2]
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
)


def test_version_is_semantic() -> None:
    assert SEMVER.match(mpi_operator.__version__)


def test_package_metadata_reads_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "mpi_operator.__version__"
    }


def test_make_reads_it_with_nothing_but_make(tmp_path: Path) -> None:
    make = subprocess.run(["sh", "-c", "command -v make"], capture_output=True, text=True)
    (tmp_path / "make").symlink_to(make.stdout.strip())
    # $(info ...) is make's own output: no shell, no echo.
    out = subprocess.run(
        ["make", "-s", "--eval", "show: ; $(info $(VERSION) $(IMG))", "show"],
        cwd=ROOT,
        env={**os.environ, "PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    v = mpi_operator.__version__
    assert out.stdout.split() == [v, f"mpi-operator-python:{v}"]


def test_chart_and_manifests_carry_it() -> None:
    chart = yaml.safe_load((ROOT / "charts/mpi-operator/Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == mpi_operator.__version__
    image = f"image: mpi-operator-python:{mpi_operator.__version__}"
    assert image in (ROOT / "manifests/base/deployment.yaml").read_text()
    assert image in (ROOT / "deploy/v2beta1/mpi-operator.yaml").read_text()


def test_changelog_latest_release_is_it() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert releases[0] == "Unreleased"
    assert releases[1] == mpi_operator.__version__


def test_version_lines_name_version_and_commit() -> None:
    lines = version.version_lines()
    assert lines[1] == f"Version: v{mpi_operator.__version__}"
    assert lines[2].startswith("Git SHA: ")


def test_no_git_is_no_commit_not_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no git binary at all
    assert version.checkout_commit(ROOT) == ""
    (tmp_path / ".git").mkdir()  # a checkout, but git is missing
    assert version.checkout_commit(tmp_path) == ""
