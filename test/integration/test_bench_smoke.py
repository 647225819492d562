"""Smoke run of the side-by-side benchmark harness (bench/sidebyside), so it never rots.

Run exactly as docs/development/benchmarks.md says, through ``make bench`` (with the smoke preset): one
tiny MPIJob each way (fan-out, throughput) for both operators - ours and the
reference Go operator v0.8.2, installed by hack/install-reference-operator.sh when
missing (needs Go; a cold install takes a few minutes once, then it is cached) - on
the harness's own full local cluster. Checks the plumbing, not the figures.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from bench.sidebyside.report import format_summary
from devcluster import Binaries, BinariesMissingError
from devcluster import binaries as binmod

ROOT = Path(__file__).resolve().parents[2]

# host_wide: the reference operator serves :8080, whatever its flags say.
pytestmark = [pytest.mark.full_cluster, pytest.mark.host_wide, pytest.mark.timeout(1200)]


def _have_binaries() -> Binaries:
    try:
        return binmod.find(binmod.FULL_BINARIES)
    except BinariesMissingError as e:
        pytest.fail(str(e), pytrace=False)


def test_sidebyside_smoke(tmp_path: Path) -> None:
    _have_binaries()
    charts = importlib.util.find_spec("matplotlib") is not None
    out = tmp_path / "results" / "smoke.json"
    args = f"--preset smoke --out {out} --workdir {tmp_path / 'work'}"
    done = subprocess.run(
        ["make", "-s", "bench", f"BENCH_ARGS={args}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1100,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # The quick benchmarks' JSON line first, then the side-by-side summary.
    quick = [line for line in done.stdout.splitlines() if line.startswith('{"benchmark"')]
    assert quick and json.loads(quick[0])["jobs"] > 0
    assert "targets" in done.stdout

    result = json.loads(out.read_text())
    assert result["partial"] is False
    records = result["records"]
    errors = [r for r in records if "error" in r]
    assert not errors, errors
    seen = {(r["scenario"], r["operator"]) for r in records}
    assert seen == {
        ("fanout", "ours"),
        ("fanout", "reference"),
        ("fanout", "raw-client"),
        ("throughput", "ours"),
        ("throughput", "reference"),
        ("throughput", "raw-client"),
    }
    for r in records:
        if r["scenario"] == "fanout":
            assert r["all_pods_created_s"] > 0
        assert r["cpu_probe_ms"] > 0
        # Each run started on a quiet control plane: a canary pod was Ready first.
        assert r["settle_s"] > 0
        host = r["host_cpu"]
        assert 0 <= host["steal_pct"] <= 100 and 0 < host["busy_pct"] <= 100, host
        if r["operator"] == "raw-client":
            if r["scenario"] == "throughput":
                # With no operator, every job's children came from the plain client.
                assert 0 < r["create_to_pods_ready_p50_s"] <= r["create_to_pods_ready_p99_s"]
            continue
        assert r["peak_rss_kib"] > 0
        assert r["cpu_s"] >= 0
        # The API server alone spends CPU on every run (the operator's requests, at least).
        assert r["control_plane_cpu_s"] > 0
        # The audit log attributes the operator's own requests to it.
        assert r["api"]["by_verb_resource"].get("create pods", 0) >= 1, r["api"]
        # ... and the API server's time for its writes (pods, at least, were created).
        latency = r["api"]["write_latency_ms"]
        assert 0 < latency["p50"] <= latency["p90"] and latency["n"] >= 1, latency
        if r["scenario"] == "fanout":
            assert r["running_s"] >= r["all_pods_created_s"] - 1.0
            # The small job created during the fan-out got its pods and its status.
            assert not r["small_job_pods_timed_out"] and r["small_job_pods_s"] > 0
            assert r["small_job_created_s"] > 0
        else:
            # Not never_running == 0: an operator may sync a job only after its
            # 1-second launcher finished and go straight to Succeeded.
            assert r["failed"] == 0 and r["succeeded"] == r["jobs"]
            assert not r["timed_out"]
            assert r["all_succeeded_s"] >= r["launcher_seconds"]
            # Every job's launcher and workers were seen Ready, before it Succeeded.
            assert 0 < r["create_to_pods_ready_p50_s"] <= r["create_to_pods_ready_p99_s"]
            assert r["create_to_pods_ready_p99_s"] < r["all_succeeded_s"]

    summary = result["summary"]["shipped-defaults"]
    assert summary["fanout"]["all_pods_created_s"]["ratio_ours_reference"] > 0
    assert summary["throughput"]["all_succeeded_s"]["ratio_ours_reference"] > 0
    assert summary["fanout"]["machine"]["write_latency_p50_ms"]["reference"]["median"] > 0
    assert "targets" in format_summary(result)
    if charts:
        for name in ("fanout", "throughput", "memory", "cpu", "api-shipped-defaults"):
            assert (tmp_path / "results" / f"smoke-{name}.png").stat().st_size > 0
