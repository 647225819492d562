"""The machine figures recorded next to the ratios (bench/sidebyside/machine.py): the CPU
probe and the API server's time per write, their summary, rendering and comparison."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from bench.sidebyside.compare import compare, machine_changes
from bench.sidebyside.machine import (
    CpuTimes,
    cpu_probe_ms,
    cpu_seconds,
    host_cpu,
    total_cpu_seconds,
    write_latency_ms,
)
from bench.sidebyside.report import format_markdown
from bench.sidebyside.summary import summarize


def event(verb: str, received: str, completed: str | None) -> dict[str, Any]:
    ev = {"verb": verb, "requestReceivedTimestamp": f"2026-11-23T18:27:{received}Z"}
    if completed is not None:
        ev["stageTimestamp"] = f"2026-11-23T18:27:{completed}Z"
    return ev


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([], None),
        ([event("get", "00.000", "00.050"), event("watch", "00.000", "09.000")], None),
        ([event("create", "00.000", "00.004")], {"p50": 4.0, "p90": 4.0, "n": 1.0}),
        (
            [event("create", "00.000", f"00.{ms:03d}") for ms in range(1, 11)]
            + [event("list", "00.000", "05.000")],
            {"p50": 5.5, "p90": 9.0, "n": 10.0},
        ),
        (
            [
                event("delete", "01.000", "01.010"),
                event("patch", "01.000", "01.030"),
                event("update", "01.000", "01.020"),
                event("create", "01.000", None),  # no stage timestamp: not counted
            ],
            {"p50": 20.0, "p90": 30.0, "n": 3.0},
        ),
    ],
)
def test_write_latency_counts_only_writes_with_both_timestamps(
    events: list[dict[str, Any]], expected: dict[str, float] | None
) -> None:
    got = write_latency_ms(events)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


STAT = "cpu  {user} 0 {system} {idle} {iowait} 0 0 {steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"


def stat(user: int, system: int, idle: int, iowait: int, steal: int) -> CpuTimes:
    return CpuTimes.parse(
        STAT.format(user=user, system=system, idle=idle, iowait=iowait, steal=steal)
    )


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        # 100 ticks: 30 user + 10 system busy, 40 idle + 10 iowait, 10 stolen.
        (stat(0, 0, 0, 0, 0), stat(30, 10, 40, 10, 10), {"steal_pct": 10.0, "busy_pct": 40.0}),
        (stat(5, 5, 5, 5, 5), stat(5, 5, 105, 5, 5), {"steal_pct": 0.0, "busy_pct": 0.0}),
        (stat(0, 0, 0, 0, 0), stat(0, 0, 0, 0, 50), {"steal_pct": 100.0, "busy_pct": 0.0}),
        (stat(1, 1, 1, 1, 1), stat(1, 1, 1, 1, 1), None),  # no time between the readings
        (None, stat(1, 1, 1, 1, 1), None),
        (stat(1, 1, 1, 1, 1), None, None),
    ],
)
def test_host_cpu_shares_of_the_time_between_two_readings(
    before: CpuTimes | None, after: CpuTimes | None, expected: dict[str, float] | None
) -> None:
    assert host_cpu(before, after) == expected


def test_cpu_times_parse_only_the_aggregate_line() -> None:
    assert stat(3, 4, 5, 6, 7) == CpuTimes(total=25, idle=11, steal=7)
    with pytest.raises(ValueError, match="aggregate cpu line"):
        CpuTimes.parse("cpu0 1 2 3 4 5 6 7 8\n")
    # An old kernel without a steal column counts no steal.
    assert CpuTimes.parse("cpu 1 2 3 4 5 6 7\n") == CpuTimes(total=28, idle=9, steal=0)
    here = CpuTimes.read()  # this machine's own /proc/stat
    assert here is not None and here.total > 0


def test_cpu_probe_times_real_work() -> None:
    ms = cpu_probe_ms(rounds=3)
    assert 0.5 < ms < 5000


def test_cpu_seconds_of_processes_that_run_and_none_of_those_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "sum(range(10**7))"])
    # Exited but not reaped yet (WNOWAIT): /proc still has its times.
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    spent = cpu_seconds(child.pid)
    mine = cpu_seconds(os.getpid())
    assert spent is not None and spent > 0
    assert mine is not None and mine > 0
    assert total_cpu_seconds([os.getpid(), child.pid]) >= spent
    child.wait()
    assert cpu_seconds(child.pid) is None
    assert total_cpu_seconds([child.pid]) == 0.0


def record(operator: str, rep: int, probe: float, latency: float | None) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "scenario": "fanout",
        "config": "equal",
        "rep": rep,
        "operator": operator,
        "workers": 500,
        "all_pods_created_s": 3.0 if operator == "ours" else 6.0,
        "cpu_probe_ms": probe,
        "host_cpu": {"steal_pct": probe / 10, "busy_pct": 50.0},
    }
    if operator != "raw-client":
        rec["control_plane_cpu_s"] = 30.0 + rep * 15
    if operator != "raw-client":
        lat = None if latency is None else {"p50": latency, "p90": latency * 2, "n": 500.0}
        rec["api"] = {"total": 600, "write_latency_ms": lat}
    return rec


def run(latencies: tuple[float, float], probe: float) -> dict[str, Any]:
    records = [
        record("ours", 0, probe, 80.0),
        record("reference", 0, probe + 1, latencies[0]),
        record("raw-client", 0, probe + 2, None),
        record("ours", 1, probe, 90.0),
        record("reference", 1, probe + 1, latencies[1]),
    ]
    return {"summary": summarize(records), "sizes": {"reps": 2}, "machine": {"cpus": 2}}


def test_summary_keeps_machine_figures_per_runner_and_no_ratio_of_them() -> None:
    result = run((4.0, 8.0), probe=27.0)
    machine = result["summary"]["equal"]["fanout"]["machine"]
    assert machine["cpu_probe_ms"]["reference"] == {"median": 28.0, "samples": [28.0, 28.0]}
    assert machine["cpu_probe_ms"]["raw-client"]["samples"] == [29.0]
    assert machine["write_latency_p50_ms"]["reference"]["samples"] == [4.0, 8.0]
    assert machine["write_latency_p50_ms"]["reference"]["median"] == 6.0
    assert "raw-client" not in machine["write_latency_p50_ms"]
    assert machine["steal_pct"]["ours"]["samples"] == [2.7, 2.7]
    assert machine["busy_pct"]["raw-client"]["median"] == 50.0
    assert machine["control_plane_cpu_s"]["ours"] == {"median": 37.5, "samples": [30.0, 45.0]}
    assert "raw-client" not in machine["control_plane_cpu_s"]
    # The reproducibility check compares ratios only: the machine figures add none.
    metrics = {r.metric for r in compare(result, result)}
    assert "all_pods_created_s" in metrics
    assert not metrics & {"machine", "cpu_probe_ms", "write_latency_p50_ms"}


def test_markdown_shows_the_machine_figures_under_the_table() -> None:
    md = format_markdown(run((4.0, 8.0), probe=27.0))
    assert "CPU probe before the run, ms, median (per rep): ours 27.0 (27.0, 27.0)" in md
    assert "API server time per write, p50 ms, median (per rep): ours 85.0 (80.0, 90.0);" in md
    assert "reference 6.0 (4.0, 8.0)" in md


def test_compare_lists_how_the_machine_moved_between_runs() -> None:
    rows = machine_changes(run((4.0, 4.0), probe=20.0), run((8.0, 8.0), probe=30.0))
    assert rows[0].startswith("| config | scenario | machine figure |")
    assert "| equal | fanout | write_latency_p50_ms | reference | 4.0 | 8.0 | +100% |" in rows
    assert "| equal | fanout | cpu_probe_ms | ours | 20.0 | 30.0 | +50% |" in rows
    assert machine_changes({"summary": {}}, {"summary": {}}) == []
