"""``python -m bench.sidebyside`` flags: what they do to the preset's sizes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.sidebyside import __main__ as cli
from bench.sidebyside.presets import Sizes


@pytest.fixture
def sizes_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Sizes]:
    """Runs nothing: records the sizes main() would run and writes an empty result."""
    ran: list[Sizes] = []

    def fake_run(sizes: Sizes, out: Path, workdir: Path | None = None) -> dict[str, Any]:
        ran.append(sizes)
        out.write_text(json.dumps({"summary": {}, "records": [], "sizes": {}}))
        return {}

    monkeypatch.setattr(cli, "run", fake_run)
    monkeypatch.setattr(cli, "format_summary", lambda result: "")
    return ran


@pytest.mark.parametrize(
    ("args", "reps", "fanout_reps"),
    [
        ([], 3, None),
        (["--reps", "2"], 2, None),
        (["--fanout-reps", "7"], 3, 7),
        (["--reps", "1", "--fanout-reps", "4"], 1, 4),
    ],
)
def test_repetition_flags(
    sizes_run: list[Sizes],
    tmp_path: Path,
    args: list[str],
    reps: int,
    fanout_reps: int | None,
) -> None:
    assert cli.main(["--preset", "full", "--out", str(tmp_path / "r.json"), *args]) == 0
    [sizes] = sizes_run
    assert (sizes.reps, sizes.fanout_reps) == (reps, fanout_reps)


@pytest.mark.parametrize(
    ("args", "profile", "reference_scenarios"),
    [
        ([], False, ("fanout", "throughput")),
        (["--profile"], True, ("fanout", "throughput")),
        (["--ours-only"], False, ()),
        (["--profile", "--ours-only"], True, ()),
    ],
)
def test_profile_and_ours_only_flags(
    sizes_run: list[Sizes],
    tmp_path: Path,
    args: list[str],
    profile: bool,
    reference_scenarios: tuple[str, ...],
) -> None:
    assert cli.main(["--preset", "full", "--out", str(tmp_path / "r.json"), *args]) == 0
    [sizes] = sizes_run
    assert (sizes.profile, sizes.reference_scenarios) == (profile, reference_scenarios)


@pytest.mark.parametrize(
    ("preset", "args", "fairness", "running_wait"),
    [
        ("smoke", [], True, None),
        ("reduced", [], False, None),
        ("reduced", ["--fairness"], True, None),
        ("reduced", ["--running-wait", "30"], False, 30.0),
        ("full", [], False, 120.0),
        ("full", ["--fairness", "--running-wait", "5.5"], True, 5.5),
        ("scale", [], True, None),
    ],
)
def test_fairness_and_running_wait_flags(
    sizes_run: list[Sizes],
    tmp_path: Path,
    preset: str,
    args: list[str],
    fairness: bool,
    running_wait: float | None,
) -> None:
    assert cli.main(["--preset", preset, "--out", str(tmp_path / "r.json"), *args]) == 0
    [sizes] = sizes_run
    assert (sizes.fairness, sizes.running_wait) == (fairness, running_wait)


def test_ours_arg_passes_flags_to_ours_only(sizes_run: list[Sizes], tmp_path: Path) -> None:
    out = str(tmp_path / "r.json")
    assert cli.main(["--out", out, "--ours-arg=--threadiness=4", "--ours-arg=-v=4"]) == 0
    assert cli.main(["--out", out]) == 0
    assert [s.ours_args for s in sizes_run] == [("--threadiness=4", "-v=4"), ()]


@pytest.mark.parametrize(
    ("args", "lanes"), [([], 1), (["--raw-lanes", "0"], 0), (["--raw-lanes", "4"], 4)]
)
def test_raw_lanes_paces_the_throughputs_raw_ceiling(
    sizes_run: list[Sizes], tmp_path: Path, args: list[str], lanes: int
) -> None:
    assert cli.main(["--out", str(tmp_path / "r.json"), *args]) == 0
    [sizes] = sizes_run
    assert sizes.raw_lanes == lanes
