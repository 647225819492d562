"""Figures that are lower bounds (a wait cut short) and the fairness target.

A wait cut before its event (``--timeout``, the fan-out's ``running_wait``, the small
job's wait) keeps the time waited: the event took at least that long. Such a sample
is flagged in its record; here the summary marks what it makes inexact:

* a median over samples some of which are lower bounds is itself a lower bound (raising
  a sample never lowers the median): ``lower_bounds`` counts them per runner;
* a paired ratio a/b is a lower bound when a is one, an upper bound when b is one, and
  unknown when both are; the median of the ratios inherits the one direction they share
  (``ratio_<name>_bound``: ``"lower"``, ``"upper"`` or ``"unknown"``; absent: exact).

Pure functions over the records; no I/O.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

#: metric -> the record flag saying its value is a lower bound (the time waited).
LOWER_BOUNDS = {
    "all_succeeded_s": "timed_out",
    "running_s": "running_timed_out",
    "small_job_pods_s": "small_job_pods_timed_out",
    "small_job_created_s": "small_job_created_timed_out",
    # Counted until Running: a run cut before it had at least one write still to make.
    "status_config_writes": "running_timed_out",
}
#: Metrics computed from a record (not one of its fields).
DERIVED = frozenset({"status_config_writes"})
#: Fairness: the small job's pods exist within this many seconds of its create request.
FAIRNESS_LIMIT = 5.0
FAIRNESS_METRIC = "small_job_pods_s"


def is_lower_bound(rec: dict[str, Any], metric: str) -> bool:
    flag = LOWER_BOUNDS.get(metric)
    return flag is not None and bool(rec.get(flag)) and _measured(rec, metric)


def _measured(rec: dict[str, Any], metric: str) -> bool:
    """The record has ``metric``: a number of its own, or one derived from it."""
    return metric in DERIVED or isinstance(rec.get(metric), (int, float))


def within_limit(value: float | None, bound: str | None, limit: float) -> bool | None:
    """Is ``value`` <= ``limit``, given what the value is (:func:`ratio_bound`)? None when
    unmeasured, or when the bound leaves it open (an upper bound above the limit, a
    lower bound under it)."""
    if value is None:
        return None
    if bound is None:
        return value <= limit
    if bound == "upper" and value <= limit:
        return True
    if bound == "lower" and value > limit:
        return False
    return None


def mark_lower_bounds(entry: dict[str, Any], recs: list[dict[str, Any]], metric: str) -> None:
    """Add ``lower_bounds`` (how many of its samples are) to each runner of ``entry``."""
    for who, figures in entry.items():
        if not isinstance(figures, dict) or "samples" not in figures:
            continue
        n = sum(1 for r in recs if r["operator"] == who and is_lower_bound(r, metric))
        if n:
            figures["lower_bounds"] = n


def ratio_bound(recs: list[dict[str, Any]], metric: str, a: str, b: str) -> str | None:
    """What the median of the paired ratios a/b of ``metric`` is: None (exact),
    ``"lower"``, ``"upper"`` or ``"unknown"`` (see the module docstring)."""
    by_rep: dict[tuple[Any, Any], dict[str, bool]] = defaultdict(dict)
    for r in recs:
        if r["operator"] in (a, b) and _measured(r, metric):
            by_rep[(r.get("source"), r["rep"])][r["operator"]] = is_lower_bound(r, metric)
    directions = set()
    for pair in by_rep.values():
        if a not in pair or b not in pair:
            continue
        if pair[a] and pair[b]:
            directions.add("unknown")
        elif pair[a]:
            directions.add("lower")
        elif pair[b]:
            directions.add("upper")
    if not directions:
        return None
    return directions.pop() if len(directions) == 1 else "unknown"


def fairness_targets(summary: dict[str, Any], runners: tuple[str, ...]) -> list[dict[str, Any]]:
    """Per configuration and runner that measured it: the small job's pods within
    ``FAIRNESS_LIMIT`` seconds in every repetition (the value is the worst one).

    Met is unknown (None) when the worst exact sample is within the limit but some
    sample is a lower bound that is too (it cannot be, with the harness's waits)."""
    rows: list[dict[str, Any]] = []
    for config, scenarios in summary.items():
        if config == "targets" or not isinstance(scenarios, dict):
            continue
        entry = scenarios.get("fanout", {}).get(FAIRNESS_METRIC)
        if not isinstance(entry, dict):
            continue
        for who in runners:
            figures = entry.get(who)
            if not isinstance(figures, dict):
                continue
            worst = max(figures["samples"])
            if worst > FAIRNESS_LIMIT:
                met: bool | None = False
            else:
                met = None if figures.get("lower_bounds") else True
            rows.append(
                {
                    "target": f"fairness: small job's pods within {FAIRNESS_LIMIT:g} s"
                    f" (worst repetition), {who}",
                    "config": config,
                    "value": worst,
                    "limit": FAIRNESS_LIMIT,
                    "met": met,
                }
            )
    return rows


def bound_prefix(bound: str | None) -> str:
    """The sign shown before a bounded figure: >= lower, <= upper, ? unknown."""
    return {None: "", "lower": "≥", "upper": "≤", "unknown": "?"}[bound]
