"""Text renderings of a results summary: the console lines ``make bench`` prints and the
Markdown tables committed next to the JSON (``sidebyside-*.md``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .summary import COUNTS, OURS, RAW, REFERENCE, busiest_first


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
    "ready_rss_kib": "RSS once ready, before any work (MiB)",
    "status_config_writes": "status and discover_hosts.sh writes",
    "api_total": "API requests (run)",
    "api_per_job": "API requests per MPIJob",
    "api_writes_per_job": "API writes per MPIJob",
    "never_running": "MPIJobs never seen Running",
    "workers_left": "workers left after cleanup",
}


def _repetitions(sizes: dict[str, Any]) -> str:
    reps, fanout = sizes.get("reps"), sizes.get("fanout_reps")
    if fanout is None or fanout == reps:
        return f"{reps} repetitions"
    return f"{reps} repetitions ({fanout} of the fan-out)"


MACHINE_LABELS = {
    "cpu_probe_ms": "CPU probe before the run, ms",
    "steal_pct": "CPU time stolen by the hypervisor during the run, %",
    "busy_pct": "CPU time busy during the run (all processes), %",
    "write_latency_p50_ms": "API server time per write, p50 ms",
    "control_plane_cpu_s": "control plane CPU during the run, s",
}


def _machine_lines(machine: dict[str, dict[str, Any]]) -> list[str]:
    """How fast the machine was in each repetition (not a ratio: context for one)."""
    lines = []
    for metric, entry in machine.items():
        parts = [
            f"{who} {entry[who]['median']:.1f} ("
            + ", ".join(f"{x:.1f}" for x in entry[who]["samples"])
            + ")"
            for who in (OURS, REFERENCE, RAW)
            if who in entry
        ]
        lines.append(
            f"\n{MACHINE_LABELS.get(metric, metric)}, median (per rep): " + "; ".join(parts)
        )
    return lines


def format_markdown(result: dict[str, Any], charts: Sequence[Path] = ()) -> str:
    """The summary as Markdown tables (medians over repetitions; ratios are the median
    of the paired per-repetition ratios, with their bootstrap 90% interval),
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
        f"Sizes: {_repetitions(sizes)}; fan-out workers {sizes.get('fanout_workers')};"
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
                "| metric | ours | reference | raw client | ours/reference [90% interval]"
                " | per-rep ratios |",
                "|---|---:|---:|---:|---:|---|",
            ]
            for metric, entry in sc.items():
                if not isinstance(entry, dict) or "ratio_ours_reference" not in entry:
                    continue
                k = 1 / 1024 if metric.endswith("_kib") else 1.0
                digits = 0 if metric in COUNTS else 2

                def cell(
                    who: str, entry: dict[str, Any] = entry, k: float = k, d: int = digits
                ) -> str:
                    return f"{entry[who]['median'] * k:.{d}f}" if who in entry else ""

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
                interval = entry.get("ratio_ours_reference_ci90")
                if r is not None and interval:
                    rtxt += f" [{interval[0]:.2f}-{interval[1]:.2f}]"
                if raw is not None:
                    rtxt += f" (ours/raw {raw:.2f})"
                lines.append(
                    f"| {LABELS.get(metric, metric)} | {cell(OURS)} | {cell(REFERENCE)} "
                    f"| {cell(RAW)} | {rtxt} | {reps} |"
                )
            lines += _machine_lines(sc.get("machine") or {})
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
