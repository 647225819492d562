"""The units make test hands its pytest-xdist workers (test/worker_units.py), in a real
``pytest -n 2 --dist loadgroup`` run of a small project: a module's tests share a worker,
a package with a package-scoped fixture shares one, and everything host-wide (a test
marked ``host_wide`` or ``real_cluster``, in any module) runs in one worker, before any
other test of that worker."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_RECORD = """
import os
from pathlib import Path


def record(name):
    with Path(os.environ["RECORD"]).open("a") as out:
        out.write(f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')} {name}\\n")
"""


def _project(tmp: Path) -> None:
    files = {
        "pytest.ini": """
            [pytest]
            markers =
                host_wide: host-wide
                real_cluster: the real node
        """,
        "conftest.py": f"""
            import sys
            sys.path.insert(0, {str(ROOT / "test")!r})
            import worker_units


            def pytest_configure(config):
                config.pluginmanager.register(worker_units, "worker_units")
        """,
        "record.py": _RECORD,
        "test_a.py": """
            from record import record
            def test_a1(): record("a")
            def test_a2(): record("a")
            def test_a3(): record("a")
        """,
        "test_b.py": """
            import pytest
            from record import record
            def test_b1(): record("b")
            @pytest.mark.host_wide
            def test_b_host(): record("host")
            def test_b2(): record("b")
        """,
        "test_c.py": """
            import pytest
            from record import record
            pytestmark = pytest.mark.real_cluster
            def test_c1(): record("host")
            def test_c2(): record("host")
        """,
        "test_d.py": """
            from record import record
            def test_d1(): record("d")
            def test_d2(): record("d")
        """,
        "pkg/__init__.py": "",
        "pkg/conftest.py": """
            import pytest
            @pytest.fixture(scope="package")
            def shared():
                return 1
        """,
        "pkg/test_p1.py": """
            from record import record
            def test_p1(shared): record("pkg")
        """,
        "pkg/test_p2.py": """
            from record import record
            def test_p2(shared): record("pkg")
        """,
    }
    for name, text in files.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _run(tmp_path: Path, workers: int) -> list[list[str]]:
    """The project's tests as make test runs them (``-n`` from MPI_TEST_WORKERS): each
    test's worker and unit, in the order they ran."""
    project = tmp_path / "project"
    _project(project)
    record = tmp_path / "record.txt"
    command = [sys.executable, "-m", "pytest", "-n", str(workers), "--dist", "loadgroup"]
    done = subprocess.run(
        [*command, "-p", "no:cacheprovider"],
        cwd=project,
        env={"PATH": "/usr/bin:/bin", "RECORD": str(record), "PYTHONPATH": str(project)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line.split() for line in record.read_text().splitlines()]


def test_modules_packages_and_the_host_wide_tests_each_go_whole_to_one_worker(
    tmp_path: Path,
) -> None:
    lines = _run(tmp_path, 2)
    assert len(lines) == 12
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, unit in lines:
        workers[unit].add(worker)
    assert all(len(w) == 1 for w in workers.values()), lines
    # The host-wide worker ran those tests before anything else it was given.
    (host,) = workers["host"]
    mine = [unit for worker, unit in lines if worker == host]
    assert mine[:3] == ["host"] * 3, lines
    # Two workers ran something: the units were spread, not all given to one.
    assert len({worker for worker, _ in lines}) == 2, lines


def test_no_workers_runs_every_test_in_the_one_process(tmp_path: Path) -> None:
    # MPI_TEST_WORKERS=0 make test: pytest -n 0 --dist loadgroup.
    lines = _run(tmp_path, 0)
    assert len(lines) == 12
    assert {worker for worker, _ in lines} == {"main"}, lines
