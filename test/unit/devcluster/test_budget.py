"""The time budget ``make test`` checks at its end (devcluster/budget.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from devcluster.budget import BUDGET_S, COLD_BUILD_S, CpuSample, busy_share, judge

WARM_BUILDS = {"helm": 1.0, "binaries": 2.0, "kueue": 1.0}
PHASES = [("virtualenv", 10.0), ("unit tests", 150.0), ("cluster suites", 3000.0)]


def test_a_warm_run_within_the_budget_passes_and_says_so() -> None:
    verdict = judge(PHASES, WARM_BUILDS, None, 2, budget=3200.0)
    assert verdict.ok
    assert verdict.lines[-1] == "warm run within the budget (3160 of 3200 s)"
    assert judge([("cluster suites", BUDGET_S)], WARM_BUILDS, None, 2).ok


def test_a_warm_run_past_the_budget_fails_naming_both_figures() -> None:
    verdict = judge([*PHASES, ("slow suite", BUDGET_S)], WARM_BUILDS, None, 2)
    assert not verdict.ok
    assert verdict.lines[-1].startswith(f"over budget: this warm run took {3160 + BUDGET_S:.0f} s")


@pytest.mark.parametrize("seconds", [COLD_BUILD_S + 1, 600.0])
def test_a_cold_run_is_reported_and_never_failed(seconds: float) -> None:
    builds = {**WARM_BUILDS, "kueue": seconds}
    verdict = judge([*PHASES, ("slow suite", BUDGET_S)], builds, None, 2)
    assert verdict.ok
    assert verdict.lines[-1] == "cold run (built kueue): the budget is not checked"


def test_a_build_of_exactly_the_threshold_is_still_warm() -> None:
    verdict = judge([*PHASES, ("slow", BUDGET_S)], {"kueue": COLD_BUILD_S}, None, 2)
    assert not verdict.ok


def test_the_phases_are_listed_with_their_sum() -> None:
    lines = judge(PHASES, WARM_BUILDS, None, 2).lines
    assert lines[1:5] == [
        f"{'virtualenv':<28}{10:>8}",
        f"{'unit tests':<28}{150:>8}",
        f"{'cluster suites':<28}{3000:>8}",
        f"{'in all':<28}{3160:>8}",
    ]


def test_steps_run_beside_the_phases_are_shown_and_not_added() -> None:
    beside = [("lint and type checks", 12.0), ("unit tests", 140.0)]
    verdict = judge(PHASES, WARM_BUILDS, None, 2, budget=3200.0, beside=beside)
    assert verdict.ok
    assert verdict.lines[5] == (
        "beside the phases (not added): lint and type checks 12 s, unit tests 140 s"
    )
    assert verdict.lines[-1] == "warm run within the budget (3160 of 3200 s)"


def test_cpu_counters_count_iowait_as_idle() -> None:
    # user nice system idle iowait irq softirq steal, in ticks of 1/100 s
    sample = CpuSample.parse("cpu  100 0 50 800 50 0 0 0 0 0", 100.0)
    assert sample == CpuSample(busy=1.5, total=10.0)


def test_the_cluster_suites_cpu_share_gives_the_packed_floor() -> None:
    start, end = CpuSample(busy=10.0, total=100.0), CpuSample(busy=410.0, total=1100.0)
    busy, share = busy_share(start, end)
    assert (busy, share) == (400.0, 0.4)
    line = judge(PHASES, WARM_BUILDS, (busy, share), 2).lines[6]
    assert line == "cluster suites: the 2 cores 40% busy (400 core-s): packed with no wait, 200 s"


def test_the_module_reads_what_test_sh_leaves(tmp_path: Path) -> None:
    (tmp_path / "phases.txt").write_text("virtualenv 3\nunit tests 140\ncluster suites 9000\n")
    (tmp_path / "beside.txt").write_text("lint and type checks 12\n")
    (tmp_path / "helm.done").write_text("1\n")
    (tmp_path / "kueue.failed").write_text("")
    (tmp_path / "cpu-cluster-start").write_text("cpu  100 0 0 900 0 0 0 0 0 0\n")
    (tmp_path / "cpu-cluster-end").write_text("cpu  600 0 0 1400 0 0 0 0 0 0\n")
    env = {**os.environ, "MPI_OPERATOR_BUILDS_DIR": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-m", "devcluster.budget"], env=env, capture_output=True, text=True
    )
    assert run.returncode == 1, run.stdout
    assert f"{'in all':<28}{9143:>8}" in run.stdout
    assert "builds: helm 1 s" in run.stdout
    assert "beside the phases (not added): lint and type checks 12 s" in run.stdout
    assert re.search(r"cluster suites: the \d+ cores 50% busy \(5 core-s\)", run.stdout)
    assert "over budget: this warm run took 9143 s" in run.stdout


@pytest.mark.parametrize(("marked", "cold"), [(False, False), (True, True)])
def test_the_operator_image_rebuilt_for_the_source_is_cold_only_when_it_built_its_base(
    tmp_path: Path, marked: bool, cold: bool
) -> None:
    # Its image layer is redone for every commit, slower beside the workers (80 s seen).
    (tmp_path / "phases.txt").write_text(f"cluster suites {BUDGET_S + 1:.0f}\n")
    (tmp_path / "helm.done").write_text("1\n")
    (tmp_path / "operator-image.done").write_text(f"{COLD_BUILD_S + 20:.0f}\n")
    if marked:  # hack/build-operator-image.sh, when it built the base
        (tmp_path / "operator-image.cold").write_text("")
    env = {**os.environ, "MPI_OPERATOR_BUILDS_DIR": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-m", "devcluster.budget"], env=env, capture_output=True, text=True
    )
    assert run.returncode == (0 if cold else 1), run.stdout
    assert ("cold run (built operator-image)" in run.stdout) == cold, run.stdout
    assert ("over budget" in run.stdout) == (not cold), run.stdout
