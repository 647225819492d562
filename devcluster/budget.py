"""The time budget of ``make test``: per-phase seconds, the CPU the run kept busy, and a
check that fails a warm run whose phases add up past the budget.

``hack/test.sh`` records each phase's seconds and the machine's CPU counters
(``/proc/stat``) at the phases' edges in ``$MPI_OPERATOR_BUILDS_DIR``, the seconds of
the checks that run beside the phases (ruff, mypy and the unit tests: shown, not added),
and each build of its lanes leaves its seconds in its ``<target>.done`` marker. At the end it runs
``python -m devcluster.budget``, which prints the table and judges:

* **warm or cold:** a run is cold when one of its builds took longer than
  :data:`COLD_BUILD_S` (a real build, not a check of the cache key: warm, each takes a
  few seconds), a build redone for each change of the source only when it says it built
  more (:data:`PER_SOURCE_BUILDS`); a cold run is reported, never failed, since its time
  is the builds'.
* **over budget:** a warm run whose phases add up past :data:`BUDGET_S` fails, so that
  growth is seen when it happens, not at CI's 90-minute wall. :data:`TARGET_S` is the
  goal, printed beside it.
* **the CPU's share:** how busy the two cores were during the cluster suites. Their
  busy core-seconds over the number of cores is the time the suites would take were
  their work packed with no wait: the floor no reordering of the same tests goes below.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from devcluster.builds import BUILDS_DIR_ENV

#: Seconds a warm ``make test`` may take on this machine kind (2 cores) before the check
#: fails: the last measured warm run (1,693 s, the cluster suites in two workers) and
#: 40%: with the workers the run is mostly CPU (the cores 67% busy), and builds of this
#: virtual machine have moved CPU-bound figures by a third.
BUDGET_S = 2400.0
#: The goal for a warm ``make test``.
TARGET_S = 35 * 60.0
#: A build that took longer than this built something: the run is cold.
COLD_BUILD_S = 60.0
#: Builds redone for every change of the checkout's source, whatever the caches hold
#: (the operator's image: its wheel's layer, slower beside the test workers): cold only
#: when the build left ``<name>.cold`` in the builds' directory (the image's base built).
PER_SOURCE_BUILDS = frozenset({"operator-image"})
COLD_SUFFIX = ".cold"

PHASES_FILE = "phases.txt"
BESIDE_FILE = "beside.txt"
CPU_PREFIX = "cpu-"


@dataclass(frozen=True, slots=True)
class CpuSample:
    """The machine's CPU counters at one moment, in seconds summed over all cores."""

    busy: float
    total: float

    @classmethod
    def parse(cls, line: str, ticks_per_second: float) -> CpuSample:
        """From the first line of ``/proc/stat`` (``cpu user nice system idle iowait ...``)."""
        fields = [float(v) / ticks_per_second for v in line.split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
        return cls(busy=sum(fields) - idle, total=sum(fields))


def read_cpu() -> CpuSample:
    with open("/proc/stat", encoding="ascii") as stat:
        line = stat.readline()
    return CpuSample.parse(line, float(os.sysconf("SC_CLK_TCK")))


def busy_share(start: CpuSample, end: CpuSample) -> tuple[float, float]:
    """Busy core-seconds between two samples, and their share of all cores' seconds."""
    busy, total = end.busy - start.busy, end.total - start.total
    return busy, (busy / total if total > 0 else 0.0)


@dataclass(frozen=True, slots=True)
class Verdict:
    lines: list[str]
    ok: bool


def judge(
    phases: list[tuple[str, float]],
    builds: dict[str, float],
    cluster_cpu: tuple[float, float] | None,
    cores: int,
    budget: float = BUDGET_S,
    target: float = TARGET_S,
    beside: list[tuple[str, float]] | None = None,
    built_cold: frozenset[str] = frozenset(),
) -> Verdict:
    """The summary's lines, and whether the run keeps its budget (a cold one always does).
    ``beside``: steps that ran beside the phases, shown and not added; ``built_cold``:
    the per-source builds that built more than their per-source part."""
    total = sum(seconds for _, seconds in phases)
    lines = [f"{'phase':<28}{'s':>8}"]
    lines += [f"{name:<28}{seconds:>8.0f}" for name, seconds in phases]
    lines.append(f"{'in all':<28}{total:>8.0f}")
    if beside:
        lines.append(
            "beside the phases (not added): "
            + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in beside)
        )
    long_builds = sorted(
        name
        for name, seconds in builds.items()
        if seconds > COLD_BUILD_S and (name not in PER_SOURCE_BUILDS or name in built_cold)
    )
    if builds:
        lines.append(
            "builds: " + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in builds.items())
        )
    if cluster_cpu is not None:
        busy, share = cluster_cpu
        lines.append(
            f"cluster suites: the {cores} cores {share:.0%} busy ({busy:.0f} core-s): "
            f"packed with no wait, {busy / cores:.0f} s"
        )
    lines.append(f"target {target:.0f} s, budget {budget:.0f} s (warm runs)")
    if long_builds:
        lines.append(f"cold run (built {', '.join(long_builds)}): the budget is not checked")
        return Verdict(lines, True)
    if total > budget:
        lines.append(
            f"over budget: this warm run took {total:.0f} s, past {budget:.0f} s; "
            "see the slowest tests and files above"
        )
        return Verdict(lines, False)
    lines.append(f"warm run within the budget ({total:.0f} of {budget:.0f} s)")
    return Verdict(lines, True)


def _phases(directory: Path, file: str = PHASES_FILE) -> list[tuple[str, float]]:
    path = directory / file
    if not path.exists():
        return []
    out: list[tuple[str, float]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        name, _, seconds = line.rpartition(" ")
        if name:
            out.append((name, float(seconds)))
    return out


def _builds(directory: Path) -> dict[str, float]:
    builds: dict[str, float] = {}
    for marker in sorted(directory.glob("*.done"), key=lambda p: p.stat().st_mtime):
        text = marker.read_text(encoding="utf-8").strip()
        if text:
            builds[marker.stem] = float(text)
    return builds


def _cpu(directory: Path, name: str) -> CpuSample | None:
    path = directory / f"{CPU_PREFIX}{name}"
    if not path.exists():
        return None
    return CpuSample.parse(path.read_text(encoding="ascii"), float(os.sysconf("SC_CLK_TCK")))


def main() -> int:
    directory = Path(os.environ[BUILDS_DIR_ENV])
    start, end = _cpu(directory, "cluster-start"), _cpu(directory, "cluster-end")
    cluster_cpu = busy_share(start, end) if start and end else None
    verdict = judge(
        _phases(directory),
        _builds(directory),
        cluster_cpu,
        os.cpu_count() or 1,
        beside=_phases(directory, BESIDE_FILE),
        built_cold=frozenset(p.name.removesuffix(COLD_SUFFIX) for p in directory.glob("*.cold")),
    )
    print("=" * 30 + " make test: the time budget " + "=" * 30)
    for line in verdict.lines:
        print(line)
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
