"""Ratios are paired per repetition (the two operators ran back to back), summarised by
their median with a bootstrap 90% interval."""

from __future__ import annotations

from typing import Any

import pytest

from bench.sidebyside.summary import bootstrap_interval, paired_ratios, summarize


def rec(operator: str, rep: int, cpu: float, source: str | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {
        "scenario": "fanout",
        "config": "equal-100-200",
        "rep": rep,
        "operator": operator,
        "cpu_s": cpu,
    }
    if source:
        r["source"] = source
    return r


def test_each_repetition_is_compared_with_its_own_partner() -> None:
    recs = [rec("ours", 0, 1.0), rec("reference", 0, 2.0), rec("ours", 1, 3.0)]
    recs += [rec("reference", 1, 3.0)]
    assert paired_ratios(recs, "cpu_s", "ours", "reference") == [0.5, 1.0]


def test_a_repetition_missing_one_side_is_left_out() -> None:
    recs = [rec("ours", 0, 1.0), rec("reference", 0, 4.0), rec("ours", 1, 3.0)]
    assert paired_ratios(recs, "cpu_s", "ours", "reference") == [0.25]


def test_merged_runs_pair_only_within_their_source() -> None:
    recs = [rec("ours", 0, 1.0, "a"), rec("reference", 0, 2.0, "b")]
    assert paired_ratios(recs, "cpu_s", "ours", "reference") == []


def test_the_median_of_paired_ratios_differs_from_the_ratio_of_medians() -> None:
    # ours 1, 10, 10; reference 10, 1, 20: per-rep 0.1, 10, 0.5 -> median 0.5;
    # a ratio of medians would say 10 / 10 = 1.0.
    recs = []
    for rep, (a, b) in enumerate([(1.0, 10.0), (10.0, 1.0), (10.0, 20.0)]):
        recs += [rec("ours", rep, a), rec("reference", rep, b)]
    entry = summarize(recs)["equal-100-200"]["fanout"]["cpu_s"]
    assert entry["ratio_ours_reference"] == 0.5
    assert entry["per_rep_ratios"] == [0.1, 10.0, 0.5]
    low, high = entry["ratio_ours_reference_ci90"]
    assert low <= 0.5 <= high


@pytest.mark.parametrize(
    ("values", "expected"),
    [([], None), ([0.7], (0.7, 0.7)), ([1.0, 1.0, 1.0], (1.0, 1.0))],
)
def test_bootstrap_interval_edge_cases(
    values: list[float], expected: tuple[float, float] | None
) -> None:
    assert bootstrap_interval(values) == expected


def test_bootstrap_interval_is_reproducible_and_brackets_the_median() -> None:
    values = [0.8, 0.9, 1.0, 1.1, 1.3]
    a, b = bootstrap_interval(values), bootstrap_interval(values)
    assert a == b and a is not None
    assert a[0] <= 1.0 <= a[1]
    assert a[0] >= min(values) and a[1] <= max(values)
