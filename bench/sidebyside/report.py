"""Medians, ratios (ours/reference, measured in the same run) and targets of a run.

``python -m bench.sidebyside.report bench/results/sidebyside-full.json`` redraws the
charts and rewrites the summary (JSON and Markdown) of a results file;
``python -m bench.sidebyside.report --merge OUT.json A.json B.json`` merges runs first;
``--no-charts`` writes the Markdown alone (for archived runs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .machine import WRITE_VERBS

OURS, REFERENCE, RAW = "ours", "reference", "raw-client"

METRICS = {
    "fanout": ("all_pods_created_s", "running_s", "cpu_s", "peak_rss_kib", "api_total"),
    "throughput": (
        "all_succeeded_s",
        "create_to_running_p50_s",
        "create_to_running_p99_s",
        "create_to_pods_ready_p50_s",
        "create_to_pods_ready_p99_s",
        "cpu_s",
        "peak_rss_kib",
        "api_total",
        "api_per_job",
        "api_writes_per_job",
        "never_running",
        "workers_left",
    ),
}
#: Counts of things that went wrong: shown per operator, never as a ratio.
COUNTS = ("never_running", "workers_left")
#: Percentiles over the jobs seen Running: taken only from repetitions in which every
#: job was seen Running, so both operators' figures cover the same set of jobs.
COMPLETE_ONLY = ("create_to_running_p50_s", "create_to_running_p99_s")


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _value(rec: dict[str, Any], metric: str) -> float | None:
    if metric == "api_total":
        return rec.get("api", {}).get("total") if rec["operator"] != RAW else None
    if metric == "api_per_job":
        total = rec.get("api", {}).get("total")
        return total / rec["jobs"] if total is not None and rec.get("jobs") else None
    if metric == "api_writes_per_job":
        by = rec.get("api", {}).get("by_verb_resource")
        if by is None or not rec.get("jobs"):
            return None
        # Access reviews are the start-up check's questions, not writes of state.
        writes = sum(
            n
            for key, n in by.items()
            if key.split(" ")[0] in WRITE_VERBS and "accessreviews" not in key
        )
        return float(writes) / float(rec["jobs"])
    if metric in COMPLETE_ONLY and rec.get("never_running") != 0:
        return None
    v = rec.get(metric)
    return float(v) if isinstance(v, (int, float)) else None


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["config"], r["scenario"])].append(r)
    out: dict[str, Any] = {}
    for (config, scenario), recs in groups.items():
        sc: dict[str, Any] = {}
        ok = [r for r in recs if "error" not in r]
        sc["errors"] = [
            f"{r['operator']} rep{r['rep']}: {r['error']}" for r in recs if "error" in r
        ]
        for metric in METRICS[scenario]:
            entry = _per_runner(ok, metric, _value)
            med = {w: entry[w]["median"] for w in entry}
            if metric in COUNTS:
                sc[metric] = {**entry, "ratio_ours_reference": None}
                continue
            entry["ratio_ours_reference"] = _ratio(med.get(OURS), med.get(REFERENCE))
            if RAW in med:
                entry["ratio_ours_raw"] = _ratio(med.get(OURS), med.get(RAW))
                entry["ratio_reference_raw"] = _ratio(med.get(REFERENCE), med.get(RAW))
            # Per-rep ratios (same rep ran back to back): their spread shows the noise.
            reps = sorted({r["rep"] for r in ok})
            per_rep = []
            for rep in reps:
                a = [_value(r, metric) for r in ok if r["rep"] == rep and r["operator"] == OURS]
                b = [
                    _value(r, metric) for r in ok if r["rep"] == rep and r["operator"] == REFERENCE
                ]
                if a and b and a[0] is not None and b[0]:
                    per_rep.append(a[0] / b[0])
            if per_rep:
                entry["per_rep_ratios"] = per_rep
            sc[metric] = entry
        if scenario == "throughput":
            sc["timed_out"] = [
                f"{r['operator']} rep{r['rep']}: {r.get('succeeded')}/{r['jobs']} Succeeded, "
                f"{r.get('never_running')} never Running after {r['all_succeeded_s']:.0f} s"
                for r in ok
                if r.get("timed_out")
            ]
            sc["api_per_job_by_verb_resource"] = _api_breakdown(ok)
            sc["jobs"] = ok[0].get("jobs") if ok else None
        if scenario == "fanout":
            sc["workers"] = ok[0].get("workers") if ok else None
        sc["machine"] = machine_summary(ok)
        out.setdefault(config, {})[scenario] = sc
    out["targets"] = targets(out)
    return out


#: How fast the machine was during each run (see machine.py): never a ratio.
MACHINE = (
    "cpu_probe_ms",
    "steal_pct",
    "busy_pct",
    "write_latency_p50_ms",
    "control_plane_cpu_s",
)


def _machine_value(rec: dict[str, Any], metric: str) -> float | None:
    if metric == "write_latency_p50_ms":
        latency = rec.get("api", {}).get("write_latency_ms") if rec["operator"] != RAW else None
        return float(latency["p50"]) if latency else None
    if metric in ("steal_pct", "busy_pct"):
        host = rec.get("host_cpu")
        return float(host[metric]) if host else None
    v = rec.get(metric)
    return float(v) if isinstance(v, (int, float)) else None


def _per_runner(
    recs: list[dict[str, Any]],
    metric: str,
    value: Callable[[dict[str, Any], str], float | None],
) -> dict[str, Any]:
    """Runner -> the median and the samples (in rep order) of ``metric``, for the
    runners that have any."""
    entry: dict[str, Any] = {}
    for who in (OURS, REFERENCE, RAW):
        samples = [v for r in recs if r["operator"] == who if (v := value(r, metric)) is not None]
        if samples:
            entry[who] = {"median": _median(samples), "samples": samples}
    return entry


def machine_summary(recs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per machine figure and runner: the median and the samples in rep order."""
    out: dict[str, dict[str, Any]] = {}
    for metric in MACHINE:
        if entry := _per_runner(recs, metric, _machine_value):
            out[metric] = entry
    return out


def _api_breakdown(recs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Median requests per MPIJob, by "verb resource", for each operator."""
    res: dict[str, dict[str, float]] = {}
    for who in (OURS, REFERENCE):
        rs = [r for r in recs if r["operator"] == who and r.get("api") and r.get("jobs")]
        keys = {k for r in rs for k in r["api"]["by_verb_resource"]}
        res[who] = {
            k: statistics.median(r["api"]["by_verb_resource"].get(k, 0) / r["jobs"] for r in rs)
            for k in sorted(keys)
        }
    return res


def targets(summary: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def add(what: str, config: str, value: float | None, limit: float) -> None:
        rows.append(
            {
                "target": what,
                "config": config,
                "value": value,
                "limit": limit,
                "met": None if value is None else value <= limit,
            }
        )

    for config, scenarios in summary.items():
        if config == "targets":
            continue
        fo = scenarios.get("fanout", {})
        created = fo.get("all_pods_created_s", {})
        if not fo:
            pass
        elif config.startswith("shipped"):
            add(
                "fan-out all pods created, ours/reference <= 0.1",
                config,
                created.get("ratio_ours_reference"),
                0.1,
            )
        else:
            add(
                "fan-out all pods created, ours/reference <= 0.7",
                config,
                created.get("ratio_ours_reference"),
                0.7,
            )
        if "ratio_ours_raw" in created:
            add(
                "fan-out all pods created, ours/raw ceiling <= 1.5",
                config,
                created.get("ratio_ours_raw"),
                1.5,
            )
        tp = scenarios.get("throughput", {})
        if not tp:
            continue
        add(
            "throughput all Succeeded, ours/reference <= 0.7",
            config,
            tp.get("all_succeeded_s", {}).get("ratio_ours_reference"),
            0.7,
        )
        add(
            "peak RSS (throughput + unrelated pods), ours/reference <= 1.0",
            config,
            tp.get("peak_rss_kib", {}).get("ratio_ours_reference"),
            1.0,
        )
        add(
            "API requests per MPIJob, ours/reference <= 1.0",
            config,
            tp.get("api_per_job", {}).get("ratio_ours_reference"),
            1.0,
        )
        add(
            "API writes per MPIJob, ours/reference <= 1.0",
            config,
            tp.get("api_writes_per_job", {}).get("ratio_ours_reference"),
            1.0,
        )
        add(
            "CPU seconds, ours/reference <= 1.5",
            config,
            tp.get("cpu_s", {}).get("ratio_ours_reference"),
            1.5,
        )
    return rows


def busiest_first(breakdown: dict[str, dict[str, float]]) -> list[str]:
    """The verb-resource keys of both operators' breakdowns, most requests (both
    together) first, ties by name."""
    ours, reference = breakdown.get(OURS, {}), breakdown.get(REFERENCE, {})
    return sorted(
        set(ours) | set(reference), key=lambda k: (-(ours.get(k, 0) + reference.get(k, 0)), k)
    )


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
    from .formatting import format_markdown, format_summary

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
