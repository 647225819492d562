"""PNG charts of a side-by-side run's summary, one per scenario (matplotlib)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .summary import OURS, RAW, REFERENCE, RUNNERS, busiest_first


def write_charts(result: dict[str, Any], stem: Path) -> list[Path]:
    """One PNG per scenario: ``<stem>-fanout.png``, ``-throughput``, ``-memory``,
    ``-api``, ``-cpu``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = result["summary"]
    configs = [c for c in summary if c != "targets"]
    written: list[Path] = []
    colors = {OURS: "tab:blue", REFERENCE: "tab:orange", RAW: "tab:gray"}

    def bars(ax: Any, groups: list[tuple[str, dict[str, Any]]], ylabel: str, title: str) -> None:
        width = 0.27
        whos = [w for w in RUNNERS if any(w in e for _, e in groups)]
        for i, who in enumerate(whos):
            xs, ys = [], []
            for gi, (_, entry) in enumerate(groups):
                if who in entry:
                    x = gi + (i - (len(whos) - 1) / 2) * width
                    xs.append(x)
                    ys.append(entry[who]["median"])
                    ax.scatter(
                        [x] * len(entry[who]["samples"]),
                        entry[who]["samples"],
                        color="black",
                        s=8,
                        zorder=3,
                    )
            ax.bar(xs, ys, width, label=who, color=colors[who])
        for gi, (_, entry) in enumerate(groups):
            r = entry.get("ratio_ours_reference")
            if r is not None:
                top = max(entry[w]["median"] for w in whos if w in entry)
                ax.annotate(f"{r:.2f}x", (gi, top), ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(groups)), [g for g, _ in groups], fontsize=8)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)

    def figure(name: str, panels: list[tuple[str, list[tuple[str, dict[str, Any]]], str]]) -> None:
        panels = [p for p in panels if p[1]]
        if not panels:
            return
        fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
        for ax, (title, groups, ylabel) in zip(axes[0], panels, strict=True):
            bars(ax, groups, ylabel, title)
        fig.suptitle(f"{name} (medians, dots = repetitions, label = ours/reference)", fontsize=10)
        fig.tight_layout()
        path = Path(f"{stem}-{name}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)

    def get(config: str, scenario: str, metric: str) -> dict[str, Any]:
        entry: dict[str, Any] = summary.get(config, {}).get(scenario, {}).get(metric, {})
        return entry

    def scale(entry: dict[str, Any], k: float) -> dict[str, Any]:
        out = dict(entry)
        for w in RUNNERS:
            if w in entry:
                out[w] = {
                    "median": entry[w]["median"] * k,
                    "samples": [s * k for s in entry[w]["samples"]],
                }
        return out

    def panel(
        c: str, scenario: str, metrics: list[tuple[str, str]]
    ) -> list[tuple[str, dict[str, Any]]]:
        return [(label, get(c, scenario, m)) for m, label in metrics if get(c, scenario, m)]

    figure(
        "fanout",
        [
            (
                f"{c}: {summary[c].get('fanout', {}).get('workers')} workers",
                panel(
                    c,
                    "fanout",
                    [("all_pods_created_s", "all pods created"), ("running_s", "Running")],
                ),
                "seconds",
            )
            for c in configs
        ],
    )
    figure(
        "throughput",
        [
            (
                f"{c}: {summary[c].get('throughput', {}).get('jobs')} MPIJobs",
                panel(
                    c,
                    "throughput",
                    [
                        ("all_succeeded_s", "all Succeeded"),
                        ("create_to_running_p50_s", "to Running p50"),
                        ("create_to_running_p99_s", "to Running p99"),
                        ("create_to_pods_ready_p50_s", "to all pods Ready p50"),
                        ("create_to_pods_ready_p99_s", "to all pods Ready p99"),
                    ],
                ),
                "seconds",
            )
            for c in configs
        ],
    )
    figure(
        "memory",
        [
            (
                "peak RSS",
                [
                    (f"{c}\n{s}", scale(get(c, s, "peak_rss_kib"), 1 / 1024))
                    for c in configs
                    for s in ("fanout", "throughput")
                    if get(c, s, "peak_rss_kib")
                ],
                "MiB",
            )
        ],
    )
    figure(
        "cpu",
        [
            (
                "operator CPU seconds",
                [
                    (f"{c}\n{s}", get(c, s, "cpu_s"))
                    for c in configs
                    for s in ("fanout", "throughput")
                    if get(c, s, "cpu_s")
                ],
                "CPU seconds",
            )
        ],
    )
    # API cost: requests per MPIJob by verb and resource (throughput runs).
    for c in configs:
        breakdown = summary[c].get("throughput", {}).get("api_per_job_by_verb_resource")
        if not breakdown:
            continue
        keys = busiest_first(breakdown)
        fig, ax = plt.subplots(figsize=(10, max(3.0, 0.28 * len(keys) + 1)))
        ys = range(len(keys))
        for i, who in enumerate((OURS, REFERENCE)):
            vals = [breakdown.get(who, {}).get(k, 0) for k in keys]
            ax.barh([y + (i - 0.5) * 0.4 for y in ys], vals, 0.4, label=who, color=colors[who])
        ax.set_yticks(list(ys), keys, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("requests per MPIJob (median over repetitions)")
        total = get(c, "throughput", "api_per_job")
        r = total.get("ratio_ours_reference")
        ax.set_title(
            f"API requests per MPIJob, {c}" + (f" (total ours/reference {r:.2f}x)" if r else ""),
            fontsize=9,
        )
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = Path(f"{stem}-api-{c}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
