"""Medians, ratios (ours/reference, measured in the same run), targets and charts.

``python -m bench.sidebyside.report bench/results/sidebyside-full.json`` redraws the
charts and rewrites the summary (JSON and Markdown) of a results file;
``python -m bench.sidebyside.report --merge OUT.json A.json B.json`` merges runs first.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


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
        return float(writes) / rec["jobs"]
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
            entry: dict[str, Any] = {}
            for who in (OURS, REFERENCE, RAW):
                samples = [
                    v for r in ok if r["operator"] == who if (v := _value(r, metric)) is not None
                ]
                if samples:
                    entry[who] = {"median": _median(samples), "samples": samples}
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
        out.setdefault(config, {})[scenario] = sc
    out["targets"] = targets(out)
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


def format_summary(result: dict[str, Any]) -> str:
    lines = []
    summary = result["summary"]
    for config, scenarios in summary.items():
        if config == "targets":
            continue
        for scenario, sc in scenarios.items():
            lines.append(f"== {config} / {scenario}")
            for e in sc.get("errors", []):
                lines.append(f"   ERROR {e}")
            for metric, entry in sc.items():
                if not isinstance(entry, dict) or "ratio_ours_reference" not in entry:
                    continue
                meds = "  ".join(
                    f"{w}={entry[w]['median']:.2f}" for w in (OURS, REFERENCE, RAW) if w in entry
                )
                r = entry.get("ratio_ours_reference")
                extra = (
                    f"  ours/raw={entry['ratio_ours_raw']:.2f}"
                    if entry.get("ratio_ours_raw")
                    else ""
                )
                lines.append(
                    f"   {metric:26s} {meds}  ours/ref={r:.3f}{extra}"
                    if r is not None
                    else f"   {metric:26s} {meds}"
                )
    lines.append("== targets")
    for t in summary.get("targets", []):
        v = "n/a" if t["value"] is None else f"{t['value']:.3f}"
        met = {True: "MET", False: "NOT MET", None: "not measured"}[t["met"]]
        lines.append(f"   [{met}] {t['target']} ({t['config']}): {v}")
    return "\n".join(lines)


LABELS = {
    "all_pods_created_s": "all worker pods created (s)",
    "running_s": "MPIJob Running (s)",
    "all_succeeded_s": "all MPIJobs Succeeded (s)",
    "create_to_running_p50_s": "create to Running p50 (s)",
    "create_to_running_p99_s": "create to Running p99 (s)",
    "create_to_pods_ready_p50_s": "create to all its pods Ready p50 (s)",
    "create_to_pods_ready_p99_s": "create to all its pods Ready p99 (s)",
    "cpu_s": "operator CPU (s)",
    "peak_rss_kib": "peak RSS (MiB)",
    "api_total": "API requests (run)",
    "api_per_job": "API requests per MPIJob",
    "api_writes_per_job": "API writes per MPIJob",
    "never_running": "MPIJobs never seen Running",
    "workers_left": "workers left after cleanup",
}


def format_markdown(result: dict[str, Any], charts: Sequence[Path] = ()) -> str:
    """The summary as Markdown tables (medians over repetitions, ratios of medians),
    then links to ``charts`` (the PNG files drawn, next to the Markdown file)."""
    summary = result["summary"]
    sizes = result.get("sizes", {})
    if result.get("sources"):
        lines = [f"Merged from {len(result['sources'])} runs on one machine:", ""]
        for src in result["sources"]:
            sz = src["sizes"]
            partial = ", partial (interrupted)" if src.get("partial") else ""
            lines.append(
                f"* `{src['file']}` ({src['generated']}{partial}):"
                f" fan-out workers {sz.get('fanout_workers')}, throughput MPIJobs"
                f" {sz.get('throughput_jobs')}, {sz.get('reps')} repetitions,"
                f" {sz.get('unrelated_pods')} unrelated pods, timeout {sz.get('timeout')} s"
            )
        lines.append("")
        result = {**result, "sources": None}
        return "\n".join(lines) + format_markdown(result, charts).split("\n", 3)[3]
    lines = [
        f"Generated {result.get('generated')} on {result.get('machine', {}).get('cpus')} CPUs"
        f" ({result.get('machine', {}).get('platform')}); wall time "
        f"{result.get('meta', {}).get('wall_seconds', 0) / 60:.0f} min"
        + (" - **partial run**" if result.get("partial") else "")
        + ".",
        "",
        f"Sizes: {sizes.get('reps')} repetitions; fan-out workers {sizes.get('fanout_workers')};"
        f" throughput MPIJobs {sizes.get('throughput_jobs')} of {sizes.get('throughput_workers')}"
        f" workers, launchers complete after {sizes.get('launcher_seconds')} s;"
        f" {sizes.get('unrelated_pods')} unrelated pods; {sizes.get('nodes')} KWOK nodes.",
        "",
    ]
    for config, scenarios in summary.items():
        if config == "targets":
            continue
        for scenario, sc in scenarios.items():
            n = sc.get("workers") if scenario == "fanout" else sc.get("jobs")
            unit = "workers" if scenario == "fanout" else "MPIJobs"
            lines += [
                f"### {scenario} - {config} ({n} {unit})",
                "",
                "| metric | ours | reference | raw client | ours/reference | per-rep ratios |",
                "|---|---:|---:|---:|---:|---|",
            ]
            for metric, entry in sc.items():
                if not isinstance(entry, dict) or "ratio_ours_reference" not in entry:
                    continue
                k = 1 / 1024 if metric == "peak_rss_kib" else 1.0

                def cell(who: str, entry: dict[str, Any] = entry, k: float = k) -> str:
                    return f"{entry[who]['median'] * k:.2f}" if who in entry else ""

                r = entry.get("ratio_ours_reference")
                reps = ", ".join(f"{x:.2f}" for x in entry.get("per_rep_ratios", []))
                if metric in COUNTS:  # no ratio: each operator's count in every rep
                    reps = "; ".join(
                        f"{who}: " + ", ".join(f"{x:.0f}" for x in entry[who]["samples"])
                        for who in (OURS, REFERENCE)
                        if who in entry
                    )
                raw = entry.get("ratio_ours_raw")
                rtxt = "" if r is None else f"**{r:.2f}**"
                if raw is not None:
                    rtxt += f" (ours/raw {raw:.2f})"
                lines.append(
                    f"| {LABELS.get(metric, metric)} | {cell(OURS)} | {cell(REFERENCE)} "
                    f"| {cell(RAW)} | {rtxt} | {reps} |"
                )
            for e in sc.get("errors", []):
                lines.append(f"\nError: {e}")
            for e in sc.get("timed_out", []):
                lines.append(
                    f"\nTimed out (its all-Succeeded time is a lower bound, the timeout): {e}"
                )
            api = sc.get("api_per_job_by_verb_resource")
            if api:
                keys = busiest_first(api)
                lines += ["", "| requests per MPIJob | ours | reference |", "|---|---:|---:|"]
                for key in keys[:25]:
                    a = api.get(OURS, {}).get(key, 0)
                    b = api.get(REFERENCE, {}).get(key, 0)
                    lines.append(f"| {key} | {a:.2f} | {b:.2f} |")
            lines.append("")
    lines += ["### Targets", "", "| target | config | measured | met |", "|---|---|---:|---|"]
    for t in summary.get("targets", []):
        v = "n/a" if t["value"] is None else f"{t['value']:.2f}"
        met = {True: "yes", False: "**no**", None: "not measured"}[t["met"]]
        lines.append(f"| {t['target']} | {t['config']} | {v} | {met} |")
    if charts:
        lines += ["", "Charts:", ""]
        lines += [f"![{chart.stem}]({chart.name})" for chart in charts]
    return "\n".join(lines) + "\n"


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


def main(argv: list[str]) -> int:
    if argv[:1] == ["--merge"]:
        out, *sources = (Path(a) for a in argv[1:])
        merge(out, sources)
        argv = [str(out)]
    from .charts import write_charts  # matplotlib: only when drawing

    for arg in argv:
        path = Path(arg)
        result = json.loads(path.read_text())
        result["summary"] = summarize(result["records"])
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(format_summary(result))
        charts = write_charts(result, path.with_suffix(""))
        for chart in charts:
            print(f"wrote {chart}")
        md = path.with_suffix(".md")
        md.write_text(format_markdown(result, charts))
        print(f"wrote {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
