"""The Markdown summary links exactly the charts that were drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.sidebyside.report import format_markdown, summarize


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
    assert (
        "| fan-out all pods created, ours/reference <= 0.7 | equal-1000-2000 | 0.30 | yes |" in md
    )
