"""``python -m bench.sidebyside.compare FIRST.json SECOND.json``: do two runs agree?

The reproducibility check: every ratio of the first run's summary (ours over the
reference, and ours over the raw ceiling: medians of paired per-repetition ratios) is
compared with the same ratio of the second run. A ratio is reproduced when the
second's median lies inside the first's bootstrap 90% interval; for results without
an interval, when it is within ``--tolerance`` (20%) of the first. Prints a Markdown
table; exits 1 when a ratio that both runs measured is not reproduced, 0 otherwise.

It also prints how many ratios pure noise would leave inside (:func:`chance_inside`):
even with no change at all between the runs, the second median of a noisy ratio lies
inside the first's 90% interval only 60% of the time at 3 repetitions (75% as the
repetitions grow), so "every ratio reproduced" is expected only of figures without noise.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .summary import bootstrap_interval, scenarios

RATIOS = ("ratio_ours_reference", "ratio_ours_raw")
TOLERANCE = 0.2


@dataclass(frozen=True)
class Row:
    config: str
    scenario: str
    metric: str
    ratio: str
    first: float | None
    second: float | None
    #: The first run's 90% interval of this ratio, when it has one.
    interval: tuple[float, float] | None = None
    #: Paired repetitions behind each run's median, when the summary lists them.
    reps: tuple[int, int] | None = None

    @property
    def noisy(self) -> bool:
        """The first run's repetitions differ (an interval wider than a point)."""
        return self.interval is not None and self.interval[0] < self.interval[1]

    @property
    def change(self) -> float | None:
        """Relative change of the second ratio from the first."""
        if self.first is None or self.second is None or self.first == 0:
            return None
        return (self.second - self.first) / self.first

    def reproduced(self, tolerance: float = TOLERANCE) -> bool | None:
        """None when either run lacks the ratio."""
        if self.interval is not None and self.second is not None:
            return self.interval[0] <= self.second <= self.interval[1]
        change = self.change
        return None if change is None else abs(change) <= tolerance


@functools.cache
def chance_inside(n_first: int, n_second: int) -> float:
    """The chance that the median of ``n_second`` repetitions lies inside the bootstrap
    90% interval of the median of ``n_first``, when all are draws of one continuous
    distribution: the two runs measure the same thing, with noise only.

    Every order of the ``n_first + n_second`` draws is equally likely, so the chance is
    a count over which ranks the first run holds. The interval's ends are computed by
    :func:`bootstrap_interval` on each such set of ranks."""
    if n_first < 1 or n_second < 1:
        raise ValueError("both runs need a repetition")
    total = n_first + n_second
    inside = count = 0
    for held in itertools.combinations(range(total), n_first):
        taken = set(held)
        second = statistics.median(r for r in range(total) if r not in taken)
        low, high = bootstrap_interval([float(r) for r in held]) or (0.0, 0.0)
        inside += low <= second <= high
        count += 1
    return inside / count


Key = tuple[str, str, str, str]
Entry = tuple[float | None, tuple[float, float] | None, int | None]


def _ratios(summary: dict[str, Any], reps: int | None) -> dict[Key, Entry]:
    out: dict[Key, Entry] = {}
    for config, scenario, metrics in scenarios(summary):
        for metric, entry in metrics.items():
            if not isinstance(entry, dict):
                continue
            for ratio in RATIOS:
                if ratio in entry:
                    ci = entry.get(f"{ratio}_ci90")
                    interval = (float(ci[0]), float(ci[1])) if ci else None
                    per_rep = entry.get("per_rep_ratios") if ratio == RATIOS[0] else None
                    n = len(per_rep) if per_rep else reps
                    out[(config, scenario, metric, ratio)] = (entry[ratio], interval, n)
    return out


def _reps(run: dict[str, Any]) -> int | None:
    sizes = run.get("sizes") or {}
    reps = sizes.get("reps")
    return int(reps) if reps else None


def compare(first: dict[str, Any], second: dict[str, Any]) -> list[Row]:
    """One row per ratio found in either run's summary, in the first run's order."""
    a = _ratios(first["summary"], _reps(first))
    b = _ratios(second["summary"], _reps(second))
    keys = list(a) + [k for k in b if k not in a]
    none: Entry = (None, None, None)
    rows = []
    for k in keys:
        (one, interval, n1), (two, _, n2) = a.get(k, none), b.get(k, none)
        rows.append(Row(*k, one, two, interval, (n1, n2) if n1 and n2 else None))
    return rows


def expected_by_noise(rows: list[Row]) -> tuple[int, float, float] | None:
    """For the compared ratios with a noisy first run: how many there are, how many pure
    noise would leave inside the first run's interval (the mean), and the chance that
    noise leaves all of them inside. None when no such ratio has its repetitions."""
    chances = [
        chance_inside(*r.reps)
        for r in rows
        if r.noisy and r.reps is not None and r.reproduced() is not None
    ]
    if not chances:
        return None
    return len(chances), sum(chances), math.prod(chances)


def _fmt(v: float | None, pattern: str = "{:.2f}") -> str:
    return "n/a" if v is None else pattern.format(v)


def _interval(interval: tuple[float, float] | None) -> str:
    return "" if interval is None else f" [{interval[0]:.2f}-{interval[1]:.2f}]"


def format_markdown(rows: list[Row], tolerance: float = TOLERANCE) -> str:
    lines = [
        "| config | scenario | metric | ratio | first [90% interval] | second | change"
        " | reproduced |",
        "|---|---|---|---|---:|---:|---:|---|",
    ]
    verdict = {True: "yes", False: "**NO**", None: "n/a"}
    for r in rows:
        lines.append(
            f"| {r.config} | {r.scenario} | {r.metric} | {r.ratio.removeprefix('ratio_')} "
            f"| {_fmt(r.first)}{_interval(r.interval)} | {_fmt(r.second)} "
            f"| {_fmt(r.change, '{:+.0%}')} "
            f"| {verdict[r.reproduced(tolerance)]} |"
        )
    return "\n".join(lines)


def machine_changes(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    """Markdown rows: how the machine figures (CPU probe, API server write latency)
    of each scenario and runner moved between the runs, to read the ratios against."""
    rows = []
    for config, scenario, sc in scenarios(first["summary"]):
        other = second["summary"].get(config, {}).get(scenario, {})
        for metric, entry in (sc.get("machine") or {}).items():
            for who, figures in entry.items():
                then = figures["median"]
                now = (other.get("machine") or {}).get(metric, {}).get(who, {}).get("median")
                change = None if now is None or not then else (now - then) / then
                rows.append(
                    f"| {config} | {scenario} | {metric} | {who} | {_fmt(then, '{:.1f}')} "
                    f"| {_fmt(now, '{:.1f}')} | {_fmt(change, '{:+.0%}')} |"
                )
    if not rows:
        return []
    return [
        "| config | scenario | machine figure | runner | first | second | change |",
        "|---|---|---|---|---:|---:|---:|",
        *rows,
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.sidebyside.compare", description=__doc__)
    p.add_argument("first", type=Path)
    p.add_argument("second", type=Path)
    p.add_argument("--tolerance", type=float, default=TOLERANCE)
    args = p.parse_args(argv)
    first, second = json.loads(args.first.read_text()), json.loads(args.second.read_text())
    rows = compare(first, second)
    print(format_markdown(rows, args.tolerance))
    missed = [r for r in rows if r.reproduced(args.tolerance) is False]
    print(f"\n{len(missed)} of {len(rows)} ratios not reproduced (n/a: missing or 0 in a run)")
    noise = expected_by_noise(rows)
    if noise is not None:
        noisy, expected, all_inside = noise
        kept = sum(1 for r in rows if r.noisy and r.reps and r.reproduced())
        print(
            f"\nOf the {noisy} ratios whose first run varied, {kept} were reproduced; pure"
            f" noise (no change between the runs) would leave {expected:.1f} inside on"
            f" average, and all {noisy} with chance {all_inside:.2g}."
        )
    machine = machine_changes(first, second)
    if machine:
        print("\nThe machine in both runs (medians; not ratios):\n")
        print("\n".join(machine))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
