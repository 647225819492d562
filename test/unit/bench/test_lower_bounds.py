"""Cut waits (lower bounds) and the fairness target in the summary and the Markdown."""

from __future__ import annotations

from typing import Any

import pytest

from bench.sidebyside.bounds import ratio_bound, within_limit
from bench.sidebyside.report import format_markdown, format_summary
from bench.sidebyside.summary import summarize

CONFIG = "equal-100-200-2k"


def _fanout(who: str, rep: int, running: float, cut: bool, **more: Any) -> dict[str, Any]:
    return {
        "scenario": "fanout",
        "config": CONFIG,
        "rep": rep,
        "operator": who,
        "workers": 2000,
        "all_pods_created_s": 20.0,
        "running_s": running,
        "running_timed_out": cut,
        **more,
    }


@pytest.mark.parametrize(
    ("ours_cut", "reference_cut", "bound"),
    [
        ((False, False), (False, False), None),
        ((False, False), (True, False), "upper"),
        ((False, False), (True, True), "upper"),
        ((True, False), (False, False), "lower"),
        ((True, False), (False, True), "unknown"),
        ((True, False), (True, False), "unknown"),
    ],
)
def test_a_ratio_over_a_cut_wait_is_a_bound_in_the_one_direction_its_pairs_share(
    ours_cut: tuple[bool, bool], reference_cut: tuple[bool, bool], bound: str | None
) -> None:
    records = [
        _fanout(who, rep, 100.0, cut[rep])
        for rep in (0, 1)
        for who, cut in (("ours", ours_cut), ("reference", reference_cut))
    ]
    assert ratio_bound(records, "running_s", "ours", "reference") == bound
    entry = summarize(records)[CONFIG]["fanout"]["running_s"]
    assert entry.get("ratio_ours_reference_bound") == bound


@pytest.mark.parametrize(
    ("reference_cut", "row"),
    [
        ((False, False), "| MPIJob Running (s) | 20.00 | 200.00 |  | **0.10** "),
        ((True, False), "| MPIJob Running (s) | 20.00 | ≥200.00 |  | **≤0.10** "),
        ((True, True), "| MPIJob Running (s) | 20.00 | ≥200.00 |  | **≤0.10** "),
    ],
)
def test_markdown_marks_a_median_over_cut_waits_as_a_lower_bound(
    reference_cut: tuple[bool, bool], row: str
) -> None:
    records = [_fanout("ours", rep, 20.0, False) for rep in (0, 1)] + [
        _fanout("reference", rep, 200.0, reference_cut[rep]) for rep in (0, 1)
    ]
    summary = summarize(records)
    entry = summary[CONFIG]["fanout"]["running_s"]
    assert entry["reference"].get("lower_bounds", 0) == sum(reference_cut)
    assert "lower_bounds" not in entry["ours"]
    md = format_markdown({"generated": "x", "records": records, "summary": summary})
    assert [line for line in md.splitlines() if line.startswith(row)], md
    cut_lines = [line for line in md.splitlines() if line.startswith("Wait cut short")]
    assert [line.split(": ", 1)[1] for line in cut_lines] == [
        f"reference rep{rep}: running_s >= 200.0 s" for rep in (0, 1) if reference_cut[rep]
    ]
    console = format_summary({"summary": summary})
    sign = "≥" if any(reference_cut) else ""
    assert f"ours=20.00  reference={sign}200.00" in console


@pytest.mark.parametrize(
    ("ours", "reference", "met"),
    [
        # (small_job_pods_s per rep, cut per rep) -> met for ours, for the reference
        (((0.4, 1.2), (False, False)), ((3.0, 4.9), (False, False)), (True, True)),
        (((0.4, 5.2), (False, False)), ((30.0, 80.0), (False, False)), (False, False)),
        (((0.4, 1.2), (False, False)), ((2.0, 60.0), (False, True)), (True, False)),
    ],
)
def test_fairness_target_per_operator_is_the_worst_repetition_within_5_s(
    ours: tuple[tuple[float, float], tuple[bool, bool]],
    reference: tuple[tuple[float, float], tuple[bool, bool]],
    met: tuple[bool, bool],
) -> None:
    records = [
        _fanout(
            who,
            rep,
            50.0,
            False,
            small_job_pods_s=figures[0][rep],
            small_job_pods_timed_out=figures[1][rep],
            small_job_created_s=figures[0][rep] + 0.1,
            small_job_created_timed_out=figures[1][rep],
        )
        for rep in (0, 1)
        for who, figures in (("ours", ours), ("reference", reference))
    ]
    summary = summarize(records)
    rows = [t for t in summary["targets"] if t["target"].startswith("fairness")]
    assert [(r["target"].rsplit(", ", 1)[1], r["value"], r["met"]) for r in rows] == [
        ("ours", max(ours[0]), met[0]),
        ("reference", max(reference[0]), met[1]),
    ]
    assert all(r["limit"] == 5.0 and r["config"] == CONFIG for r in rows)
    console = format_summary({"summary": summary})
    assert "small job's pods within 5 s (worst repetition), ours" in console


def test_a_fan_out_without_the_small_job_has_no_fairness_target() -> None:
    records = [_fanout(who, 0, 10.0, False) for who in ("ours", "reference")]
    summary = summarize(records)
    assert "small_job_pods_s" not in summary[CONFIG]["fanout"]
    assert "small_job_created_s" not in summary[CONFIG]["fanout"]
    assert not [t for t in summary["targets"] if t["target"].startswith("fairness")]
    assert summary[CONFIG]["fanout"]["timed_out"] == []


@pytest.mark.parametrize(
    ("value", "bound", "met"),
    [
        (0.8, None, True),
        (1.0, None, False),
        (None, None, None),
        (0.8, "upper", True),  # at most 0.8
        (1.0, "upper", None),  # at most 1.0: maybe under 0.9, maybe not
        (0.8, "lower", None),  # at least 0.8: maybe over 0.9
        (1.0, "lower", False),
        (0.8, "unknown", None),
    ],
)
def test_a_bounded_ratio_meets_or_misses_a_limit_only_when_the_bound_decides(
    value: float | None, bound: str | None, met: bool | None
) -> None:
    assert within_limit(value, bound, 0.9) is met


def test_writes_counted_until_a_cut_wait_for_running_are_a_lower_bound() -> None:
    def writes(who: str, rep: int, cut: bool) -> dict[str, Any]:
        api = {"by_verb_resource": {"update mpijobs/status": 2, "update configmaps": 1}}
        return _fanout(who, rep, 150.0 if cut else 40.0, cut, api=api)

    records = [writes("ours", rep, False) for rep in (0, 1)]
    records += [writes("reference", rep, True) for rep in (0, 1)]
    summary = summarize(records)
    entry = summary[CONFIG]["fanout"]["status_config_writes"]
    assert entry["ratio_ours_reference"] == 1.0
    assert entry["ratio_ours_reference_bound"] == "upper"
    assert entry["reference"]["lower_bounds"] == 2
    [target] = [t for t in summary["targets"] if t["target"].startswith("fan-out status")]
    assert (target["value"], target["bound"], target["met"]) == (1.0, "upper", None)
    md = format_markdown({"generated": "x", "records": records, "summary": summary})
    assert "discover_hosts.sh writes, ours/reference <= 0.9 | " in md
    assert f"| {CONFIG} | ≤1.00 | open (a bound) |" in md


def test_the_fan_out_job_s_status_and_hostfile_writes_leave_out_the_small_job_s() -> None:
    # The fairness check's 1-worker job writes its status and hostfile in the same
    # namespace; only the big job's writes are the fan-out's.
    def writes(who: str, rep: int, small: int) -> dict[str, Any]:
        per_object = {
            "update mpijobs/status fanout": 2,
            "update configmaps fanout-config": 1,
            "update mpijobs/status small": small,
            "update configmaps small-config": small,
        }
        by_vr = {"update mpijobs/status": 2 + small, "update configmaps": 1 + small}
        api = {"by_verb_resource": by_vr, "updates_by_object": per_object}
        return _fanout(who, rep, 40.0, False, api=api)

    records = [writes("ours", rep, 2) for rep in (0, 1)]
    records += [writes("reference", rep, 0) for rep in (0, 1)]
    entry = summarize(records)[CONFIG]["fanout"]["status_config_writes"]
    assert entry["ours"]["median"] == entry["reference"]["median"] == 3.0
    assert entry["ratio_ours_reference"] == 1.0
