"""How fast the machine was while an operator ran: the figures that tell a slow
repetition (or a slow run) from a slower operator.

* :func:`cpu_probe_ms`: a fixed CPU-bound task (SHA-256 of 32 MiB, five times; the
  median) timed just before an operator starts. On a shared 2-CPU VM it moves with
  the host's speed and with whatever else runs on the CPUs.
* :class:`CpuTimes` / :func:`host_cpu`: the share of the machine's CPU time the
  hypervisor stole (``steal``) and the share busy, over one operator's run, from
  ``/proc/stat``. Steal is time this VM wanted to run and the host gave to others.
* :func:`cpu_seconds`: CPU seconds of the control plane's processes (API server,
  etcd, KWOK, scheduler, controller manager) over one operator's run. For the same
  operator and scenario the work is the same in every repetition, so more seconds
  mean a slower CPU (stolen cycles, a busy host), not more work.
* :func:`write_latency_ms`: the API server's own time for the operator's writes, from
  the audit log (request received to response complete), median and p90. The
  reference creates worker pods one request at a time, so its fan-out time moves
  with this figure; ours is bound by its client rate limiter.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")

PROBE_MIB = 32


def cpu_probe_ms(rounds: int = 5) -> float:
    """Median milliseconds of one SHA-256 over 32 MiB (about 27 ms on an idle host)."""
    data = bytes(range(256)) * (PROBE_MIB * 4096)
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        hashlib.sha256(data).digest()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


@dataclass(frozen=True)
class CpuTimes:
    """The aggregate ``cpu`` line of ``/proc/stat``, in clock ticks."""

    total: int
    idle: int  # idle + iowait
    steal: int

    @classmethod
    def parse(cls, stat: str) -> CpuTimes:
        fields = stat.splitlines()[0].split()
        if fields[0] != "cpu":
            raise ValueError(f"not the aggregate cpu line of /proc/stat: {fields[0]!r}")
        # user nice system idle iowait irq softirq steal (guest times are in user/nice)
        ticks = [int(x) for x in fields[1:9]] + [0] * max(0, 9 - len(fields))
        return cls(total=sum(ticks[:8]), idle=ticks[3] + ticks[4], steal=ticks[7])

    @classmethod
    def read(cls, path: Path = Path("/proc/stat")) -> CpuTimes | None:
        """None where there is no /proc/stat."""
        try:
            return cls.parse(path.read_text())
        except (OSError, ValueError, IndexError):
            return None


def host_cpu(before: CpuTimes | None, after: CpuTimes | None) -> dict[str, float] | None:
    """Percent of the CPU time between two readings that was stolen, and that was busy
    (neither idle nor stolen); None without both readings or without time between."""
    if before is None or after is None or after.total <= before.total:
        return None
    total = after.total - before.total
    steal = after.steal - before.steal
    idle = after.idle - before.idle
    return {
        "steal_pct": 100.0 * steal / total,
        "busy_pct": 100.0 * (total - idle - steal) / total,
    }


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU seconds of ``pid`` so far, from ``/proc``; None once gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def total_cpu_seconds(pids: Iterable[int]) -> float:
    """The sum of :func:`cpu_seconds` over the processes of ``pids`` still running."""
    return sum(s for pid in pids if (s := cpu_seconds(pid)) is not None)


def _timestamp(value: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


def write_latency_ms(events: Iterable[dict[str, Any]]) -> dict[str, float] | None:
    """Median and p90 (nearest rank) server-side milliseconds of the write requests
    among ``events`` (audit events); None when there are none."""
    samples = []
    for ev in events:
        if ev.get("verb") not in WRITE_VERBS:
            continue
        received, completed = ev.get("requestReceivedTimestamp"), ev.get("stageTimestamp")
        if not received or not completed:
            continue
        elapsed = _timestamp(completed) - _timestamp(received)
        samples.append(elapsed.total_seconds() * 1e3)
    if not samples:
        return None
    ordered = sorted(samples)
    p90 = ordered[max(0, -(-9 * len(ordered) // 10) - 1)]
    return {"p50": statistics.median(ordered), "p90": p90, "n": float(len(ordered))}
