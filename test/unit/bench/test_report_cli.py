"""``python -m bench.sidebyside.report``: bad arguments get a clear error naming them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.sidebyside.report import main


def _results_file(path: Path) -> Path:
    records = [
        {"scenario": "fanout", "config": "equal-1000-2000", "rep": 0, "operator": who, **m}
        for who, m in (
            ("ours", {"all_pods_created_s": 1.2, "workers": 500}),
            ("reference", {"all_pods_created_s": 4.0, "workers": 500}),
        )
    ]
    path.write_text(json.dumps({"generated": "2026-11-22T00:00:00+00:00", "records": records}))
    return path


def test_help_exits_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "--no-charts" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nowhere.json"], "results file nowhere.json: not found"),
        ([], "no results file given"),
        (["--merge", "out.json", "{a}"], "--merge needs at least two results files"),
    ],
)
def test_bad_arguments_name_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    a = _results_file(tmp_path / "a.json")
    with pytest.raises(SystemExit) as exc:
        main([arg.format(a=a) for arg in argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_no_charts_rewrites_summary_and_markdown_only(tmp_path: Path) -> None:
    path = _results_file(tmp_path / "run.json")
    assert main([str(path), "--no-charts"]) == 0
    result = json.loads(path.read_text())
    ratio = result["summary"]["equal-1000-2000"]["fanout"]["all_pods_created_s"]
    assert ratio["ratio_ours_reference"] == pytest.approx(0.3)
    md = (tmp_path / "run.md").read_text()
    assert "Charts:" not in md
    assert not list(tmp_path.glob("*.png"))
