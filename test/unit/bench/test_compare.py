"""The reproducibility check of two side-by-side benchmark runs (bench/sidebyside/compare)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from bench.sidebyside.compare import (
    Row,
    chance_inside,
    compare,
    expected_by_noise,
    format_markdown,
    main,
)


def run(ratios: dict[str, float | None], raw: float | None = None) -> dict[str, Any]:
    fanout: dict[str, Any] = {"errors": [], "workers": 500}
    for metric, ratio in ratios.items():
        fanout[metric] = {"ours": 1.0, "reference": 2.0, "ratio_ours_reference": ratio}
    if raw is not None:
        fanout["all_pods_created_s"]["ratio_ours_raw"] = raw
    return {"summary": {"shipped": {"fanout": fanout}, "targets": [{"value": 9.0}]}}


@pytest.mark.parametrize(
    ("first", "second", "reproduced"),
    [
        (0.30, 0.30, True),
        (0.30, 0.36, True),  # +20% exactly
        (0.30, 0.24, True),  # -20% exactly
        (0.30, 0.37, False),
        (0.30, 0.23, False),
        (0.30, None, None),
        (None, 0.30, None),
        (0.0, 0.0, None),
    ],
)
def test_a_ratio_is_reproduced_within_twenty_percent_of_the_first(
    first: float | None, second: float | None, reproduced: bool | None
) -> None:
    assert Row("c", "s", "m", "ratio_ours_reference", first, second).reproduced() is reproduced


def test_rows_cover_every_ratio_of_both_runs_and_skip_the_targets() -> None:
    rows = compare(
        run({"all_pods_created_s": 0.3, "cpu_s": 1.5}, raw=0.99),
        run({"all_pods_created_s": 0.33, "peak_rss_kib": 1.2}, raw=1.0),
    )
    assert [(r.metric, r.ratio, r.first, r.second) for r in rows] == [
        ("all_pods_created_s", "ratio_ours_reference", 0.3, 0.33),
        ("all_pods_created_s", "ratio_ours_raw", 0.99, 1.0),
        ("cpu_s", "ratio_ours_reference", 1.5, None),
        ("peak_rss_kib", "ratio_ours_reference", None, 1.2),
    ]
    table = format_markdown(rows)
    assert (
        "| shipped | fanout | all_pods_created_s | ours_reference | 0.30 | 0.33 | +10% | yes |"
        in table
    )
    assert "| shipped | fanout | cpu_s | ours_reference | 1.50 | n/a | n/a | n/a |" in table


def test_the_command_fails_when_a_ratio_is_not_reproduced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, same, other = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    first.write_text(json.dumps(run({"cpu_s": 1.0})))
    same.write_text(json.dumps(run({"cpu_s": 1.1})))
    other.write_text(json.dumps(run({"cpu_s": 1.5})))
    assert main([str(first), str(same)]) == 0
    assert main([str(first), str(other)]) == 1
    assert "**NO**" in capsys.readouterr().out


def test_a_second_median_inside_the_first_interval_is_reproduced() -> None:
    first = Row("c", "fanout", "cpu_s", "ratio_ours_reference", 1.0, 1.35, (0.8, 1.4))
    assert first.reproduced() is True  # 35% away, but inside the interval
    assert Row("c", "fanout", "cpu_s", "r", 1.0, 1.05, (0.9, 1.02)).reproduced() is False


@pytest.mark.parametrize(
    ("reps", "chance"),
    [
        # 3 each: the interval is the first run's range, and the second median falls
        # outside it when the second run holds both lowest or both highest of the six.
        (3, 1 - 8 / 20),
        (5, 1 - 2 * 21 / 252),
        (1, 0.0),  # one repetition: a point, which another draw never hits
    ],
)
def test_pure_noise_leaves_a_second_median_inside_the_first_interval_only_by_chance(
    reps: int, chance: float
) -> None:
    assert chance_inside(reps, reps) == pytest.approx(chance)


def test_the_noise_expectation_counts_only_ratios_whose_first_run_varied(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = [
        Row("c", "s", "cpu_s", "r", 1.0, 1.1, (0.9, 1.2), (3, 3)),
        Row("c", "s", "rss", "r", 1.0, 1.5, (0.8, 1.2), (3, 3)),
        Row("c", "s", "writes", "r", 0.6, 0.6, (0.6, 0.6), (3, 3)),  # no noise
        Row("c", "s", "running", "r", 0.5, None, (0.4, 0.6), (3, 3)),  # not compared
    ]
    assert expected_by_noise(rows) == pytest.approx((2, 1.2, 0.36))
    assert expected_by_noise(rows[2:]) is None

    def with_reps(ratios: list[float]) -> dict[str, Any]:
        out = run({"cpu_s": statistics.median(ratios)})
        entry = out["summary"]["shipped"]["fanout"]["cpu_s"]
        entry["per_rep_ratios"] = ratios
        entry["ratio_ours_reference_ci90"] = [min(ratios), max(ratios)]
        return out

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(with_reps([0.9, 1.0, 1.2])))
    second.write_text(json.dumps(with_reps([1.0, 1.1, 1.3])))
    assert main([str(first), str(second)]) == 0
    assert (
        "Of the 1 ratios whose first run varied, 1 were reproduced; pure noise (no change"
        " between the runs) would leave 0.6 inside on average, and all 1 with chance 0.6."
        in capsys.readouterr().out
    )
