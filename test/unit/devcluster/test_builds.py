"""devcluster.builds: a test waits for a build `make test` runs beside the suites."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from devcluster import builds


def test_without_builds_beside_nothing_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(builds.BUILDS_DIR_ENV, raising=False)
    builds.wait_for("kueue", timeout=0)


def test_a_finished_build_is_not_waited_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(builds.BUILDS_DIR_ENV, str(tmp_path))
    (tmp_path / "kueue.done").touch()
    builds.wait_for("kueue", timeout=0)


def test_a_build_under_way_is_waited_for(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(builds.BUILDS_DIR_ENV, str(tmp_path))
    timer = threading.Timer(0.3, (tmp_path / "node-images.done").touch)
    timer.start()
    try:
        builds.wait_for("node-images", timeout=10, poll=0.05)
    finally:
        timer.cancel()
    assert (tmp_path / "node-images.done").exists()


def test_a_failed_build_fails_the_test_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(builds.BUILDS_DIR_ENV, str(tmp_path))
    (tmp_path / "operator-image.failed").touch()
    with pytest.raises(builds.BuildFailedError, match="`make operator-image` failed"):
        builds.wait_for("operator-image", timeout=10)


def test_a_build_that_does_not_end_in_time_fails_the_test(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(builds.BUILDS_DIR_ENV, str(tmp_path))
    with pytest.raises(builds.BuildFailedError, match="did not end within"):
        builds.wait_for("mpi", timeout=0.2, poll=0.05)
