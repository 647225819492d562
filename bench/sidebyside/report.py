"""Rewrites a run's summary (JSON, Markdown) and charts; merges runs.

``python -m bench.sidebyside.report bench/results/sidebyside-full.json`` redraws the
charts and rewrites the summary (JSON and Markdown) of a results file;
``python -m bench.sidebyside.report --merge OUT.json A.json B.json`` merges runs first;
``--no-charts`` writes the Markdown alone (for archived runs).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .formatting import format_markdown, format_summary
from .summary import summarize


def merge(out: Path, sources: list[Path]) -> dict[str, Any]:
    """One results file from several runs (for example a run's completed scenarios and
    a later run of the others): records are kept as they are, with their source; each
    ratio still compares runs of one source, made back to back on one cluster."""
    results = [json.loads(p.read_text()) for p in sources]
    records = []
    for path, result in zip(sources, results, strict=True):
        for r in result["records"]:
            records.append({**r, "source": path.name})
    merged = {
        "generated": max(r["generated"] for r in results),
        "machine": results[-1]["machine"],
        "partial": any(r.get("partial") for r in results),
        "sources": [
            {
                "file": p.name,
                "generated": r["generated"],
                "sizes": r["sizes"],
                "partial": r.get("partial"),
                "meta": r.get("meta"),
            }
            for p, r in zip(sources, results, strict=True)
        ],
        "sizes": results[-1]["sizes"],
        "meta": {"wall_seconds": sum(r.get("meta", {}).get("wall_seconds", 0) for r in results)},
        "records": records,
    }
    merged["summary"] = summarize(records)
    out.write_text(json.dumps(merged, indent=1) + "\n")
    return merged


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.sidebyside.report",
        description="Rewrite the summary (JSON, Markdown) and redraw the charts of results files.",
    )
    p.add_argument("results", type=Path, nargs="*", help="results files (JSON) to rewrite")
    p.add_argument(
        "--merge",
        type=Path,
        metavar="OUT",
        help="merge the results files into OUT first, then rewrite OUT",
    )
    p.add_argument("--no-charts", action="store_true", help="write the Markdown without charts")
    args = p.parse_args(argv)
    for path in args.results:
        if not path.is_file():
            p.error(f"results file {path}: not found")
    paths: list[Path] = args.results
    if args.merge is not None:
        if len(paths) < 2:
            p.error("--merge needs at least two results files")
        merge(args.merge, paths)
        paths = [args.merge]
    elif not paths:
        p.error("no results file given")
    from .charts import write_charts  # matplotlib: only when drawing

    for path in paths:
        result = json.loads(path.read_text())
        result["summary"] = summarize(result["records"])
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(format_summary(result))
        charts = [] if args.no_charts else write_charts(result, path.with_suffix(""))
        for chart in charts:
            print(f"wrote {chart}")
        md = path.with_suffix(".md")
        md.write_text(format_markdown(result, charts))
        print(f"wrote {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
