"""`make demo DEMO_ARGS=--kwok` runs on KWOK's fake nodes: it builds no real node, so it
needs neither root nor apt; `make demo` (the real node) builds it. Checked with `make -n`,
which prints what would run without running it."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NODE_STEPS = ("install-node-packages.sh", "build-node-binaries.sh", "build-node-images.sh")


def _dry_run(*args: str) -> str:
    out = subprocess.run(
        ["make", "-n", "-W", "pyproject.toml", "demo", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout


def test_kwok_demo_builds_no_real_node() -> None:
    planned = _dry_run("DEMO_ARGS=--kwok")
    assert "hack/build-binaries.sh" in planned
    assert "python -m devcluster.demo --kwok" in planned
    assert not [step for step in NODE_STEPS if step in planned], planned


def test_real_demo_builds_the_real_node() -> None:
    planned = _dry_run()
    assert all(step in planned for step in NODE_STEPS), planned
