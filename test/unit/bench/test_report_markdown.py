"""The Markdown summary links exactly the charts that were drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.sidebyside.report import format_markdown
from bench.sidebyside.summary import summarize


def _fanout_only_result() -> dict[str, Any]:
    records = [
        {"scenario": "fanout", "config": "equal-1000-2000", "rep": 0, "operator": who, **m}
        for who, m in (
            ("ours", {"all_pods_created_s": 1.2, "workers": 500}),
            ("reference", {"all_pods_created_s": 4.0, "workers": 500}),
        )
    ]
    return {
        "generated": "2026-11-22T00:00:00+00:00",
        "records": records,
        "summary": summarize(records),
    }


@pytest.mark.parametrize(
    ("charts", "links"),
    [
        ((), []),
        (
            (Path("/r/sidebyside-x-fanout.png"), Path("/r/sidebyside-x-cpu.png")),
            [
                "![sidebyside-x-fanout](sidebyside-x-fanout.png)",
                "![sidebyside-x-cpu](sidebyside-x-cpu.png)",
            ],
        ),
    ],
)
def test_links_only_the_charts_drawn(charts: tuple[Path, ...], links: list[str]) -> None:
    md = format_markdown(_fanout_only_result(), charts)
    assert [line for line in md.splitlines() if line.startswith("![")] == links
    assert ("Charts:" in md) == bool(links)
    assert "**0.30** [0.30-0.30]" in md


def _throughput_record(who: str, rep: int, never_running: int, p50: float | None) -> Any:
    return {
        "scenario": "throughput",
        "config": "equal-100-200",
        "rep": rep,
        "operator": who,
        "jobs": 200,
        "never_running": never_running,
        "create_to_running_p50_s": p50,
        "workers_left": 28 if (who, rep) == ("reference", 0) else 0,
    }


def test_to_running_percentiles_only_from_reps_where_every_job_was_seen_running() -> None:
    # rep 0: 46 of 200 of ours and a few of the reference's were seen Running; the
    # percentiles cover different jobs and must not become a ratio.
    partial = [
        _throughput_record("ours", 0, 154, 28.6),
        _throughput_record("reference", 0, 190, 3.9),
        _throughput_record("ours", 1, 200, None),
        _throughput_record("reference", 1, 200, None),
    ]
    p50 = summarize(partial)["equal-100-200"]["throughput"]["create_to_running_p50_s"]
    assert p50["ratio_ours_reference"] is None
    assert "ours" not in p50 and "reference" not in p50
    complete = [
        _throughput_record("ours", 2, 0, 6.0),
        _throughput_record("reference", 2, 0, 12.0),
    ]
    p50 = summarize(partial + complete)["equal-100-200"]["throughput"]["create_to_running_p50_s"]
    assert p50["ratio_ours_reference"] == 0.5
    assert p50["ours"]["samples"] == [6.0]


def test_counts_are_shown_per_rep_and_never_as_a_ratio() -> None:
    records = [
        _throughput_record(w, rep, 200, None) for rep in (0, 1) for w in ("ours", "reference")
    ]
    summary = summarize(records)
    left = summary["equal-100-200"]["throughput"]["workers_left"]
    assert left["ratio_ours_reference"] is None
    assert "per_rep_ratios" not in left
    md = format_markdown({"generated": "x", "records": records, "summary": summary})
    assert "| workers left after cleanup | 0 | 14 |  |  | ours: 0, 0; reference: 28, 0 |" in md
    assert (
        "| MPIJobs never seen Running | 200 | 200 |  |  | ours: 200, 200; reference: 200, 200 |"
        in md
    )
