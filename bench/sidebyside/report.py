"""The reporting of a side-by-side run: the console summary ``make bench`` prints, the
Markdown tables committed next to the JSON (``sidebyside-*.md``), and the command that
rewrites them (charts: :mod:`.charts`; the numbers: :mod:`.summary`).

``python -m bench.sidebyside.report bench/results/sidebyside-full.json`` redraws the
charts and rewrites the summary (JSON and Markdown) of a results file;
``python -m bench.sidebyside.report --merge OUT.json A.json B.json`` merges runs first;
``--no-charts`` writes the Markdown alone (for archived runs).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .bounds import bound_prefix
from .summary import (
    COUNTS,
    OURS,
    REFERENCE,
    RUNNERS,
    busiest_first,
    compared,
    scenarios,
    summarize,
)

LABELS = {
    "all_pods_created_s": "all worker pods created (s)",
    "running_s": "MPIJob Running (s)",
    "all_succeeded_s": "all MPIJobs Succeeded (s)",
    "create_to_running_p50_s": "create to Running p50 (s)",
    "create_to_running_p99_s": "create to Running p99 (s)",
    "create_to_pods_ready_p50_s": "create to all its pods Ready p50 (s)",
    "create_to_pods_ready_p99_s": "create to all its pods Ready p99 (s)",
    "create_to_workers_exist_p50_s": "create to all its worker pods exist p50 (s)",
    "create_to_launcher_exists_p50_s": "create to its launcher pod exists p50 (s)",
    "create_to_scheduled_p50_s": "create to all its pods scheduled p50 (s)",
    "cpu_s": "operator CPU (s)",
    "peak_rss_kib": "peak RSS (MiB)",
    "ready_rss_kib": "RSS once ready, before any work (MiB)",
    "status_config_writes": "status and discover_hosts.sh writes",
    "api_total": "API requests (run)",
    "api_per_job": "API requests per MPIJob",
    "api_writes_per_job": "API writes per MPIJob",
    "never_running": "MPIJobs never seen Running",
    "workers_left": "workers left after cleanup",
    "small_job_pods_s": "fairness: small job's launcher and worker pods exist (s)",
    "small_job_created_s": "fairness: small job Created (s)",
}

#: What a cut wait's line says, per scenario (see ``timed_out`` in the summary).
CUT = {
    "throughput": "Timed out (its all-Succeeded time is a lower bound, the timeout)",
    "fanout": "Wait cut short (the figure is a lower bound, the time waited)",
}

MACHINE_LABELS = {
    "cpu_probe_ms": "CPU probe before the run, ms",
    "steal_pct": "CPU time stolen by the hypervisor during the run, %",
    "busy_pct": "CPU time busy during the run (all processes), %",
    "write_latency_p50_ms": "API server time per write, p50 ms",
    "control_plane_cpu_s": "control plane CPU during the run, s",
}


def format_summary(result: dict[str, Any]) -> str:
    """The console lines: each scenario's medians and ratios, then the targets."""
    lines = []
    summary = result["summary"]
    for config, scenario, sc in scenarios(summary):
        lines.append(f"== {config} / {scenario}")
        for e in sc.get("errors", []):
            lines.append(f"   ERROR {e}")
        for metric, entry in compared(sc):
            meds = "  ".join(f"{w}={_median_text(entry[w])}" for w in RUNNERS if w in entry)
            r = entry.get("ratio_ours_reference")
            extra = "  " + _raw_ratios(entry, "=", "  ") if entry.get("ratio_ours_raw") else ""
            sign = bound_prefix(entry.get("ratio_ours_reference_bound"))
            ratio = f"  ours/ref={sign}{r:.3f}{extra}" if r is not None else ""
            lines.append(f"   {metric:26s} {meds}{ratio}")
    lines.append("== targets")
    for t in summary.get("targets", []):
        v, met = _target_cells(t, 3, ("MET", "NOT MET"))
        lines.append(f"   [{met}] {t['target']} ({t['config']}): {v}")
    return "\n".join(lines)


def _target_cells(
    target: dict[str, Any], digits: int, verdicts: tuple[str, str]
) -> tuple[str, str]:
    """A target's measured value (with its bound's sign) and its verdict: ``verdicts``
    for met and missed, else why it is neither."""
    value = target["value"]
    if value is None:
        return "n/a", "not measured"
    shown = f"{bound_prefix(target.get('bound'))}{value:.{digits}f}"
    met = target["met"]
    return shown, verdicts[0] if met else verdicts[1] if met is False else "open (a bound)"


def format_markdown(result: dict[str, Any], charts: Sequence[Path] = ()) -> str:
    """The summary as Markdown tables (medians over repetitions; ratios are the median
    of the paired per-repetition ratios, with their bootstrap 90% interval),
    then links to ``charts`` (the PNG files drawn, next to the Markdown file)."""
    summary = result["summary"]
    lines = _sources(result) if result.get("sources") else _header(result)
    for config, scenario, sc in scenarios(summary):
        lines += _scenario(config, scenario, sc)
    lines += ["### Targets", "", "| target | config | measured | met |", "|---|---|---:|---|"]
    for t in summary.get("targets", []):
        v, met = _target_cells(t, 2, ("yes", "**no**"))
        lines.append(f"| {t['target']} | {t['config']} | {v} | {met} |")
    if charts:
        lines += ["", "Charts:", ""]
        lines += [f"![{chart.stem}]({chart.name})" for chart in charts]
    return "\n".join(lines) + "\n"


def _repetitions(sizes: dict[str, Any]) -> str:
    reps, fanout = sizes.get("reps"), sizes.get("fanout_reps")
    if fanout is None or fanout == reps:
        return f"{reps} repetitions"
    return f"{reps} repetitions ({fanout} of the fan-out)"


def _header(result: dict[str, Any]) -> list[str]:
    sizes = result.get("sizes", {})
    machine = result.get("machine", {})
    return [
        f"Generated {result.get('generated')} on {machine.get('cpus')} CPUs"
        f" ({machine.get('platform')}); wall time "
        f"{result.get('meta', {}).get('wall_seconds', 0) / 60:.0f} min"
        + (" - **partial run**" if result.get("partial") else "")
        + ".",
        "",
        f"Sizes: {_repetitions(sizes)}; fan-out workers {sizes.get('fanout_workers')};"
        f" throughput MPIJobs {sizes.get('throughput_jobs')} of {sizes.get('throughput_workers')}"
        f" workers, launchers complete after {sizes.get('launcher_seconds')} s;"
        f" {sizes.get('unrelated_pods')} unrelated pods; {sizes.get('nodes')} KWOK nodes.",
        "",
    ]


def _sources(result: dict[str, Any]) -> list[str]:
    """A merged run's header: one line per run it was merged from."""
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
    return [*lines, ""]


def _scenario(config: str, scenario: str, sc: dict[str, Any]) -> list[str]:
    n = sc.get("workers") if scenario == "fanout" else sc.get("jobs")
    unit = "workers" if scenario == "fanout" else "MPIJobs"
    lines = [
        f"### {scenario} - {config} ({n} {unit})",
        "",
        "| metric | ours | reference | raw client | ours/reference [90% interval]"
        " | per-rep ratios |",
        "|---|---:|---:|---:|---:|---|",
    ]
    lines += [_metric_row(metric, entry) for metric, entry in compared(sc)]
    lines += _machine_lines(sc.get("machine") or {})
    lines += [f"\nError: {e}" for e in sc.get("errors", [])]
    lines += [f"\n{CUT.get(scenario, 'Cut')}: {e}" for e in sc.get("timed_out", [])]
    api = sc.get("api_per_job_by_verb_resource")
    if api:
        lines += ["", "| requests per MPIJob | ours | reference |", "|---|---:|---:|"]
        for key in busiest_first(api)[:25]:
            a = api.get(OURS, {}).get(key, 0)
            b = api.get(REFERENCE, {}).get(key, 0)
            lines.append(f"| {key} | {a:.2f} | {b:.2f} |")
    return [*lines, ""]


def _metric_row(metric: str, entry: dict[str, Any]) -> str:
    k = 1 / 1024 if metric.endswith("_kib") else 1.0
    digits = 0 if metric in COUNTS else 2
    cells = [_median_text(entry[who], k, digits) if who in entry else "" for who in RUNNERS]
    r = entry.get("ratio_ours_reference")
    reps = ", ".join(f"{x:.2f}" for x in entry.get("per_rep_ratios", []))
    if metric in COUNTS:  # no ratio: each operator's count in every rep
        reps = "; ".join(
            f"{who}: " + ", ".join(f"{x:.0f}" for x in entry[who]["samples"])
            for who in (OURS, REFERENCE)
            if who in entry
        )
    rtxt = (
        "" if r is None else f"**{bound_prefix(entry.get('ratio_ours_reference_bound'))}{r:.2f}**"
    )
    interval = entry.get("ratio_ours_reference_ci90")
    if r is not None and interval:
        rtxt += f" [{interval[0]:.2f}-{interval[1]:.2f}]"
    if entry.get("ratio_ours_raw") is not None:
        rtxt += f" ({_raw_ratios(entry, ' ', '; ')})"
    return f"| {LABELS.get(metric, metric)} | {' | '.join(cells)} | {rtxt} | {reps} |"


def _raw_ratios(entry: dict[str, Any], eq: str, sep: str) -> str:
    """ours/raw, then reference/raw when measured: how far each is from the ceiling."""
    parts = []
    for who, name in ((OURS, "ours_raw"), (REFERENCE, "reference_raw")):
        value = entry.get(f"ratio_{name}")
        if value is not None:
            parts.append(
                f"{who}/raw{eq}{bound_prefix(entry.get(f'ratio_{name}_bound'))}{value:.2f}"
            )
    return sep.join(parts)


def _median_text(figures: dict[str, Any], k: float = 1.0, digits: int = 2) -> str:
    """A runner's median; "≥" before it when some of its samples are lower bounds."""
    sign = bound_prefix("lower" if figures.get("lower_bounds") else None)
    return f"{sign}{figures['median'] * k:.{digits}f}"


def _machine_lines(machine: dict[str, dict[str, Any]]) -> list[str]:
    """How fast the machine was in each repetition (not a ratio: context for one)."""
    lines = []
    for metric, entry in machine.items():
        parts = [
            f"{who} {entry[who]['median']:.1f} ("
            + ", ".join(f"{x:.1f}" for x in entry[who]["samples"])
            + ")"
            for who in RUNNERS
            if who in entry
        ]
        lines.append(
            f"\n{MACHINE_LABELS.get(metric, metric)}, median (per rep): " + "; ".join(parts)
        )
    return lines


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
