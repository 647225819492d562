"""The numbers of a run: medians, paired ratios with their bootstrap interval, targets.

Each repetition runs the two operators back to back (A B, then B A), so a
repetition's ratio ours/reference compares two runs made under the same load. The
figure reported is the median of those per-repetition ratios, with a 90% interval
from a percentile bootstrap over the repetitions (a fixed seed: the same records give
the same interval). Pure functions over the records; no I/O.
"""

from __future__ import annotations

import random
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .bounds import (
    fairness_targets,
    is_lower_bound,
    mark_lower_bounds,
    ratio_bound,
    within_limit,
)
from .machine import WRITE_VERBS
from .names import BIG, STATUS_CONFIG_UPDATES, STEP_METRICS

#: The fan-out MPIJob's status and ``discover_hosts.sh`` writes in ``updates_by_object``.
FANOUT_JOB_WRITES = (f"update mpijobs/status {BIG}", f"update configmaps {BIG}-config")

OURS, REFERENCE, RAW = "ours", "reference", "raw-client"
#: Who runs each scenario, in the order every table and chart shows them.
RUNNERS = (OURS, REFERENCE, RAW)

METRICS = {
    "fanout": (
        "all_pods_created_s",
        "running_s",
        "cpu_s",
        "peak_rss_kib",
        "api_total",
        "api_writes_per_job",
        "status_config_writes",
        "ready_rss_kib",
        "small_job_pods_s",
        "small_job_created_s",
    ),
    "throughput": (
        "all_succeeded_s",
        "create_to_running_p50_s",
        "create_to_running_p99_s",
        "create_to_pods_ready_p50_s",
        "create_to_pods_ready_p99_s",
        *STEP_METRICS,
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
#: Measured only in some runs (fairness: ``--fairness``): left out of runs without them.
OPTIONAL = (
    "small_job_pods_s",
    "small_job_created_s",
    # Where a job's time goes: in runs since 2026-11-27.
    *STEP_METRICS,
)
#: Percentiles over the jobs seen Running: taken only from repetitions in which every
#: job was seen Running, so both operators' figures cover the same set of jobs.
COMPLETE_ONLY = ("create_to_running_p50_s", "create_to_running_p99_s")


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def bootstrap_interval(
    values: Sequence[float], level: float = 0.9, resamples: int = 2000, seed: int = 0
) -> tuple[float, float] | None:
    """The percentile-bootstrap ``level`` interval of the median of ``values``."""
    if not values:
        return None
    if len(values) == 1:
        return (values[0], values[0])
    rng = random.Random(seed)
    medians = sorted(
        statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples)
    )
    tail = (1.0 - level) / 2.0
    return (medians[int(tail * resamples)], medians[int((1.0 - tail) * resamples) - 1])


def paired_ratios(recs: list[dict[str, Any]], metric: str, a: str, b: str) -> list[float]:
    """``a``/``b`` for every repetition (of one source) in which both have ``metric``:
    the two ran back to back, under the same load."""
    by_rep: dict[tuple[Any, Any], dict[str, float]] = defaultdict(dict)
    for r in recs:
        v = _value(r, metric)
        if v is not None and r["operator"] in (a, b):
            by_rep[(r.get("source"), r["rep"])][r["operator"]] = v
    return [
        pair[a] / pair[b]
        for _, pair in sorted(by_rep.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))
        if a in pair and pair.get(b)
    ]


def _paired(recs: list[dict[str, Any]], metric: str, a: str, b: str, name: str) -> dict[str, Any]:
    """The median of the paired ratios and its bootstrap 90% interval (None without pairs)."""
    ratios = paired_ratios(recs, metric, a, b)
    out: dict[str, Any] = {
        f"ratio_{name}": statistics.median(ratios) if ratios else None,
        f"ratio_{name}_ci90": list(interval) if (interval := bootstrap_interval(ratios)) else None,
    }
    if ratios and (bound := ratio_bound(recs, metric, a, b)):
        out[f"ratio_{name}_bound"] = bound
    if name == "ours_reference" and ratios:
        out["per_rep_ratios"] = ratios
    return out


def _value(rec: dict[str, Any], metric: str) -> float | None:
    if metric == "api_total":
        return rec.get("api", {}).get("total") if rec["operator"] != RAW else None
    if metric == "api_per_job":
        total = rec.get("api", {}).get("total")
        return total / rec["jobs"] if total is not None and rec.get("jobs") else None
    if metric == "api_writes_per_job":
        by = rec.get("api", {}).get("by_verb_resource")
        jobs = rec.get("jobs") or (1 if rec["scenario"] == "fanout" else None)
        if by is None or not jobs:
            return None
        # Access reviews are the start-up check's questions, not writes of state.
        writes = sum(
            n
            for key, n in by.items()
            if key.split(" ")[0] in WRITE_VERBS and "accessreviews" not in key
        )
        return float(writes) / float(jobs)
    if metric == "status_config_writes":
        api = rec.get("api", {})
        by = api.get("by_verb_resource")
        if by is None or rec["operator"] == RAW:
            return None
        per_object = api.get("updates_by_object")
        if per_object is not None and rec["scenario"] == "fanout":
            # The fan-out job's own: the fairness check's small job writes its status too.
            return float(sum(per_object.get(k, 0) for k in FANOUT_JOB_WRITES))
        return float(sum(by.get(k, 0) for k in STATUS_CONFIG_UPDATES))
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
            if metric in OPTIONAL and not entry:
                continue
            mark_lower_bounds(entry, ok, metric)
            med = {w: entry[w]["median"] for w in entry}
            if metric in COUNTS:
                sc[metric] = {**entry, "ratio_ours_reference": None}
                continue
            entry.update(_paired(ok, metric, OURS, REFERENCE, "ours_reference"))
            if RAW in med:
                entry.update(_paired(ok, metric, OURS, RAW, "ours_raw"))
                entry.update(_paired(ok, metric, REFERENCE, RAW, "reference_raw"))
            sc[metric] = entry
        sc["timed_out"] = _timed_out(scenario, ok)
        if scenario == "throughput":
            sc["api_per_job_by_verb_resource"] = _api_breakdown(ok)
            sc["jobs"] = ok[0].get("jobs") if ok else None
        if scenario == "fanout":
            sc["workers"] = ok[0].get("workers") if ok else None
        sc["machine"] = machine_summary(ok)
        out.setdefault(config, {})[scenario] = sc
    out["targets"] = targets(out) + fairness_targets(out, (OURS, REFERENCE))
    return out


def _timed_out(scenario: str, recs: list[dict[str, Any]]) -> list[str]:
    """One line per wait cut short in ``recs``: its figure is a lower bound."""
    if scenario == "throughput":
        return [
            f"{r['operator']} rep{r['rep']}: {r.get('succeeded')}/{r['jobs']} Succeeded, "
            f"{r.get('never_running')} never Running after {r['all_succeeded_s']:.0f} s"
            for r in recs
            if r.get("timed_out")
        ]
    lines = []
    for r in recs:
        for metric in ("running_s", "small_job_pods_s", "small_job_created_s"):
            if is_lower_bound(r, metric):
                lines.append(f"{r['operator']} rep{r['rep']}: {metric} >= {r[metric]:.1f} s")
    return lines


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


#: (scenario, metric, which ratio, limit, what): the issue's targets at equal QPS.
EQUAL_TARGETS = (
    ("fanout", "cpu_s", "ours_reference", 1.0, "fan-out CPU seconds, ours/reference"),
    ("fanout", "peak_rss_kib", "ours_reference", 1.0, "fan-out peak RSS, ours/reference"),
    ("fanout", "all_pods_created_s", "ours_raw", 1.2, "fan-out all pods created, ours/raw"),
    (
        "fanout",
        "status_config_writes",
        "ours_reference",
        0.9,
        "fan-out status and discover_hosts.sh writes, ours/reference",
    ),
    (
        "throughput",
        "create_to_pods_ready_p50_s",
        "ours_reference",
        0.7,
        "create to all pods Ready p50, ours/reference",
    ),
    (
        "throughput",
        "create_to_pods_ready_p99_s",
        "ours_reference",
        0.7,
        "create to all pods Ready p99, ours/reference",
    ),
    (
        "throughput",
        "peak_rss_kib",
        "ours_reference",
        0.8,
        "peak RSS with unrelated pods, ours/reference",
    ),
    (
        "throughput",
        "api_writes_per_job",
        "ours_reference",
        0.9,
        "writes per MPIJob, ours/reference",
    ),
)
#: Targets on the upper end of the 90% interval, not only on the median.
INTERVAL_LIMITS = {"create_to_pods_ready_p50_s": 1.0, "create_to_pods_ready_p99_s": 1.0}
SHIPPED_TARGETS = (
    ("fanout", "all_pods_created_s", "ours_reference", 0.1, "fan-out all pods created"),
    ("throughput", "all_succeeded_s", "ours_reference", 0.7, "throughput all Succeeded"),
)


def targets(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per target that the summary's configurations measure."""
    rows: list[dict[str, Any]] = []
    for config, scenarios in summary.items():
        if config == "targets":
            continue
        table = SHIPPED_TARGETS if config.startswith("shipped") else EQUAL_TARGETS
        for scenario, metric, ratio, limit, what in table:
            entry = scenarios.get(scenario, {}).get(metric)
            if not isinstance(entry, dict) or f"ratio_{ratio}" not in entry:
                continue
            value = entry[f"ratio_{ratio}"]
            bound = entry.get(f"ratio_{ratio}_bound")
            rows.append(_target(f"{what} <= {limit}", config, value, limit, bound))
            interval = entry.get(f"ratio_{ratio}_ci90")
            if metric in INTERVAL_LIMITS and interval:
                upper = INTERVAL_LIMITS[metric]
                rows.append(
                    _target(
                        f"{what}, 90% interval's upper end <= {upper}", config, interval[1], upper
                    )
                )
    return rows


def _target(
    what: str, config: str, value: float | None, limit: float, bound: str | None = None
) -> dict[str, Any]:
    met = within_limit(value, bound, limit)
    row = {"target": what, "config": config, "value": value, "limit": limit, "met": met}
    if bound is not None:
        row["bound"] = bound
    return row


def busiest_first(breakdown: dict[str, dict[str, float]]) -> list[str]:
    """The verb-resource keys of both operators' breakdowns, most requests (both
    together) first, ties by name."""
    ours, reference = breakdown.get(OURS, {}), breakdown.get(REFERENCE, {})
    return sorted(
        set(ours) | set(reference), key=lambda k: (-(ours.get(k, 0) + reference.get(k, 0)), k)
    )


def scenarios(summary: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(config, scenario, figures)`` of a summary, in order (the targets left out)."""
    for config, by_scenario in summary.items():
        if config == "targets" or not isinstance(by_scenario, dict):
            continue
        for scenario, figures in by_scenario.items():
            if isinstance(figures, dict):
                yield config, scenario, figures


def compared(figures: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The metrics of a scenario that compare the runners (not its errors, machine...)."""
    for metric, entry in figures.items():
        if isinstance(entry, dict) and "ratio_ours_reference" in entry:
            yield metric, entry
