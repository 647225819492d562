"""Runs every scenario for both operators in turn (A B A B ...) and writes the results.

Layout of one run: start a :class:`BenchCluster`, create the unrelated pods
(scenario 3), then for each client-QPS configuration and each repetition:

* fan-out (scenario 1): ours, reference, then the raw ceiling - each in a fresh
  namespace deleted (and waited for) before the next;
* throughput (scenario 2): ours, reference - peak RSS (3), audited API requests (4)
  and CPU seconds (5) of the operator process are taken from these runs - then its
  raw ceiling (each MPIJob's children created by a plain client, no operator).

Each operator is a fresh process per run, started and stopped around it (always
stopped: try/finally), so its peak RSS and CPU belong to that run alone.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .cluster import BenchCluster, audit_counts
from .machine import CpuTimes, cpu_probe_ms, host_cpu, total_cpu_seconds
from .operators import OPERATORS, OURS, REFERENCE, RunningOperator, ours_binary, reference_binary
from .presets import QpsConfig, Sizes
from .raw_ceilings import raw_ceiling, raw_throughput
from .report import format_markdown
from .scenarios import create_unrelated_pods, delete_namespace, fanout, settle, throughput
from .summary import RAW, summarize


def running_order(rep: int) -> tuple[str, ...]:
    """A B in even repetitions, B A in odd ones: neither operator always runs first,
    on the cluster the other has just loaded."""
    return OPERATORS if rep % 2 == 0 else tuple(reversed(OPERATORS))


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Runner:
    def __init__(
        self, sizes: Sizes, workdir: Path, ours: Path, reference: Path, out: Path | None = None
    ) -> None:
        self.out = out
        self.sizes = sizes
        self.workdir = workdir
        self.binaries = {OURS: ours, REFERENCE: reference}
        self.cluster = BenchCluster(workdir / "cluster", nodes=sizes.nodes)
        self.records: list[dict[str, Any]] = []
        self.meta: dict[str, Any] = {}
        self._settle_ns = ""
        self._settled = 0

    def run(self) -> dict[str, Any]:
        s = self.sizes
        started = time.monotonic()
        _log(f"starting the local cluster in {self.cluster.workdir}")
        self.cluster.start()
        try:
            if s.unrelated_pods:
                info = create_unrelated_pods(self.cluster, s.unrelated_pods)
                _log(f"created {info['pods']} unrelated pods in {info['seconds']:.1f}s")
                self.meta["unrelated_pods"] = {k: info[k] for k in ("pods", "seconds")}
            self._settle_ns = self.cluster.create_namespace("settle")
            for config in s.configs:
                for rep in range(s.fanout_repetitions):
                    self._fanout_rep(config, rep)
                for rep in range(s.reps):
                    self._throughput_rep(config, rep)
        finally:
            self.cluster.stop()
        self.meta["wall_seconds"] = time.monotonic() - started
        return self.result()

    # -- one operator run ---------------------------------------------------------

    def _with_operator(
        self,
        kind: str,
        config: QpsConfig,
        scenario: str,
        rep: int,
        body: Callable[[RunningOperator, str], dict[str, Any]],
    ) -> None:
        settle_s = self._settle()
        ns = self.cluster.create_namespace(f"{scenario}-{kind[:3]}")
        log = self.workdir / "logs" / f"{scenario}-{config.name}-{rep}-{kind}.log"
        op = RunningOperator(
            kind,
            self.cluster,
            self.binaries[kind],
            log,
            qps=config.qps if config.pass_flags else None,
            burst=config.burst if config.pass_flags else None,
            extra_args=config.extra_args + (self.sizes.ours_args if kind == OURS else ()),
            profile_to=self._flame_graph(kind, scenario, config, rep),
        )
        record: dict[str, Any] = {
            "scenario": scenario,
            "config": config.name,
            "rep": rep,
            "operator": kind,
            "settle_s": settle_s,
            "cpu_probe_ms": cpu_probe_ms(),
        }
        audit_start = self.cluster.audit_offset()
        cpu_before = CpuTimes.read()
        control_plane_before = self._control_plane_cpu()
        try:
            op.start()
            record["startup_s"] = op.start_seconds
            # Peak RSS once ready, before any work: the process's own floor.
            record["ready_rss_kib"] = op.stats().hwm_kib
            record.update(body(op, ns))
        except Exception as e:
            record["error"] = f"{type(e).__name__}: {e}"
            _log(f"{scenario}/{config.name}/{rep}/{kind} FAILED: {record['error']}")
            traceback.print_exc()
        finally:
            op.stop()
        record["host_cpu"] = host_cpu(cpu_before, CpuTimes.read())
        record["control_plane_cpu_s"] = self._control_plane_cpu() - control_plane_before
        with contextlib.suppress(Exception):
            record["namespace_delete_s"] = delete_namespace(self.cluster, ns)
        audit_end = self.cluster.audit_offset()
        record["api"] = audit_counts(self.cluster.audit_log, audit_start, audit_end)
        record["audit_log_offsets"] = [audit_start, audit_end]
        self._add(record)
        _log(f"{scenario}/{config.name}/rep{rep}/{kind}: " + _brief(record))

    def _settle(self) -> float:
        """Seconds a canary pod took to be Ready before this run (see :func:`settle`)."""
        self._settled += 1
        return settle(self.cluster, self._settle_ns, self._settled)

    def _flame_graph(self, kind: str, scenario: str, config: QpsConfig, rep: int) -> Path | None:
        if not self.sizes.profile or kind != OURS:
            return None
        where = self.out.parent if self.out is not None else self.workdir
        stem = self.out.stem if self.out is not None else "sidebyside"
        return where / f"{stem}-flame-{scenario}-{config.name}-rep{rep}.svg"

    def _control_plane_cpu(self) -> float:
        procs = self.cluster.processes.values()
        return total_cpu_seconds(p.pid for p in procs if p.pid is not None)

    def _add(self, record: dict[str, Any]) -> None:
        """Keep ``record`` and rewrite the results file: an interrupted run keeps them."""
        self.records.append(record)
        if self.out is not None:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.out.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.result(partial=True), indent=1) + "\n")
            tmp.replace(self.out)

    def _operators(self, scenario: str, rep: int) -> list[str]:
        return [
            kind
            for kind in running_order(rep)
            if kind == OURS or scenario in self.sizes.reference_scenarios
        ]

    def _fanout_rep(self, config: QpsConfig, rep: int) -> None:
        workers = self.sizes.fanout_workers.get(config.name)
        if not workers:
            return
        for kind in self._operators("fanout", rep):
            self._with_operator(
                kind,
                config,
                "fanout",
                rep,
                lambda op, ns: {
                    "workers": workers,
                    **fanout(
                        self.cluster,
                        op,
                        ns,
                        workers,
                        self.sizes.timeout,
                        fairness=self.sizes.fairness,
                        running_wait=self.sizes.running_wait,
                    ),
                },
            )
        self._raw_rep(
            config,
            "fanout",
            rep,
            {"workers": workers},
            lambda ns: raw_ceiling(self.cluster, ns, workers, config.qps, config.burst),
        )

    def _raw_rep(
        self,
        config: QpsConfig,
        scenario: str,
        rep: int,
        sizes: dict[str, Any],
        body: Callable[[str], dict[str, Any]],
    ) -> None:
        """The scenario's raw ceiling, with no operator running, when the preset has
        it in this repetition."""
        if not self.sizes.raw_ceiling or rep >= self.sizes.raw_reps.get(
            config.name, self.sizes.reps
        ):
            return
        settle_s = self._settle()
        ns = self.cluster.create_namespace(f"{scenario}-raw")
        record: dict[str, Any] = {
            "scenario": scenario,
            "config": config.name,
            "rep": rep,
            "operator": RAW,
            **sizes,
            "settle_s": settle_s,
            "cpu_probe_ms": cpu_probe_ms(),
        }
        cpu_before = CpuTimes.read()
        try:
            record.update(body(ns))
        except Exception as e:
            record["error"] = f"{type(e).__name__}: {e}"
        record["host_cpu"] = host_cpu(cpu_before, CpuTimes.read())
        with contextlib.suppress(Exception):
            record["namespace_delete_s"] = delete_namespace(self.cluster, ns)
        self._add(record)
        _log(f"{scenario}/{config.name}/rep{rep}/{RAW}: " + _brief(record))

    def _throughput_rep(self, config: QpsConfig, rep: int) -> None:
        jobs = self.sizes.throughput_jobs.get(config.name)
        if not jobs:
            return
        s = self.sizes
        for kind in self._operators("throughput", rep):
            self._with_operator(
                kind,
                config,
                "throughput",
                rep,
                lambda op, ns: {
                    "jobs": jobs,
                    "workers": s.throughput_workers,
                    "launcher_seconds": s.launcher_seconds,
                    **throughput(
                        self.cluster,
                        op,
                        ns,
                        jobs,
                        s.throughput_workers,
                        s.launcher_seconds,
                        s.timeout,
                    ),
                },
            )
        self._raw_rep(
            config,
            "throughput",
            rep,
            {
                "jobs": jobs,
                "workers": s.throughput_workers,
                "launcher_seconds": s.launcher_seconds,
                "lanes": s.raw_lanes,
            },
            lambda ns: raw_throughput(
                self.cluster,
                ns,
                jobs,
                s.throughput_workers,
                s.launcher_seconds,
                config.qps,
                config.burst,
                s.timeout,
                lanes=s.raw_lanes,
            ),
        )

    def result(self, partial: bool = False) -> dict[str, Any]:
        sizes = asdict(self.sizes)
        return {
            "generated": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
                "load_avg_at_end": os.getloadavg(),
            },
            "partial": partial,
            "sizes": sizes,
            "meta": self.meta,
            "records": self.records,
            "summary": summarize(self.records),
        }


def _brief(record: dict[str, Any]) -> str:
    keys = (
        "error",
        "all_pods_created_s",
        "running_s",
        "running_timed_out",
        "small_job_pods_s",
        "small_job_created_s",
        "all_succeeded_s",
        "create_to_running_p50_s",
        "create_to_running_p99_s",
        "create_to_pods_ready_p50_s",
        "peak_rss_kib",
        "cpu_s",
    )
    parts = []
    for k in keys:
        v = record.get(k)
        if v is not None and v is not False:
            parts.append(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}")
    if "api" in record:
        parts.append(f"api_requests={record['api']['total']}")
    return " ".join(parts)


def run(sizes: Sizes, out: Path, workdir: Path | None = None, charts: bool = True) -> Path:
    """Run everything, write ``out`` (JSON) and a PNG chart per scenario next to it.

    Logs and the cluster live in ``workdir`` (kept), or in a temporary directory
    removed afterwards.
    """
    from .charts import write_charts  # matplotlib: only when drawing

    ours = ours_binary()
    _log("installing/locating the reference operator (hack/install-reference-operator.sh)")
    reference = reference_binary()
    tmp = None
    if workdir is None:
        workdir = tmp = Path(tempfile.mkdtemp(prefix="bench-sidebyside-"))
    try:
        result = Runner(sizes, workdir, ours, reference, out).run()
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    _log(f"wrote {out}")
    drawn = write_charts(result, out.with_suffix("")) if charts else []
    for chart in drawn:
        _log(f"wrote {chart}")
    md = out.with_suffix(".md")
    md.write_text(format_markdown(result, drawn))
    _log(f"wrote {md}")
    return out
