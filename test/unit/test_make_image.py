"""`make image IMG=...` builds with docker, podman or buildah, whichever is on PATH, and
says so in one line when none is. PATH holds only make and bash (and stand-in
builders that record their arguments), so the test does not depend on this machine's
tools; no image is built."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKE_ERROR = re.compile(r"^make(\[\d+\])?: \*\*\*")


def _path_with(tmp_path: Path, builders: list[str], daemon: bool = True) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("make", "bash"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    for builder in builders:
        stub = bin_dir / builder
        # `docker info` answers as the daemon would; a build records its arguments.
        stub.write_text(
            "#!/bin/sh\n"
            f'if [ "$1" = info ]; then exit {0 if daemon else 1}; fi\n'
            f'echo "{builder} $*" > "{tmp_path}/called"\n'
        )
        stub.chmod(0o755)
    return bin_dir


def _make_image(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": str(bin_dir)}
    return subprocess.run(
        ["make", "-s", "image", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_no_builder_is_one_clear_line(tmp_path: Path) -> None:
    result = _make_image(_path_with(tmp_path, []), "IMG=example.org/mpi-operator:1")
    assert result.returncode != 0
    # make's own "Error" line (make[1] when make test runs this test under make).
    lines = [line for line in result.stderr.splitlines() if not MAKE_ERROR.match(line)]
    assert lines == [
        "make image: no container builder found on PATH: install docker, podman or buildah"
    ]
    assert not (tmp_path / "called").exists()


def test_docker_without_its_daemon_is_named(tmp_path: Path) -> None:
    result = _make_image(_path_with(tmp_path, ["docker"], daemon=False), "IMG=x:1")
    assert result.returncode != 0
    assert (
        "make image: no container builder found on PATH (docker is installed but its "
        "daemon does not answer): install docker, podman or buildah"
    ) in result.stderr.splitlines()
    assert not (tmp_path / "called").exists()


def test_docker_without_its_daemon_falls_back_to_podman(tmp_path: Path) -> None:
    result = _make_image(_path_with(tmp_path, ["docker", "podman"], daemon=False), "IMG=x:1")
    assert result.returncode == 0, result.stderr
    assert (
        tmp_path / "called"
    ).read_text().strip() == "podman build --build-arg GIT_COMMIT= --tag x:1 ."


@pytest.mark.parametrize(
    ("present", "expected"),
    [
        (["podman"], "podman build --build-arg GIT_COMMIT= --tag example.org/mpi-operator:1 ."),
        (["buildah"], "buildah bud --build-arg GIT_COMMIT= --tag example.org/mpi-operator:1 ."),
        (
            ["docker", "podman", "buildah"],
            "docker build --build-arg GIT_COMMIT= --tag example.org/mpi-operator:1 .",
        ),
        (
            ["podman", "buildah"],
            "podman build --build-arg GIT_COMMIT= --tag example.org/mpi-operator:1 .",
        ),
    ],
)
def test_first_builder_found_builds(tmp_path: Path, present: list[str], expected: str) -> None:
    result = _make_image(_path_with(tmp_path, present), "IMG=example.org/mpi-operator:1")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "called").read_text().strip() == expected


def test_default_image_name_is_the_deployments(tmp_path: Path) -> None:
    result = _make_image(_path_with(tmp_path, ["podman"]))
    assert result.returncode == 0, result.stderr
    import mpi_operator

    tag = f"mpi-operator-python:{mpi_operator.__version__}"
    assert (tmp_path / "called").read_text().split() == [
        "podman",
        "build",
        "--build-arg",
        "GIT_COMMIT=",
        "--tag",
        tag,
        ".",
    ]
    assert f"image: {tag}" in (ROOT / "manifests/base/deployment.yaml").read_text()
