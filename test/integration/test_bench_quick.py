"""``make bench BENCH_ARGS=--quick`` (bench/README.md): only the benchmarks that need no
cluster, one JSON line each, and nothing side by side. Run with ``--preset smoke``, which
sizes them down to one small round each: the plumbing is checked, not the figures."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_bench_prints_one_json_line_per_benchmark_and_starts_no_cluster() -> None:
    done = subprocess.run(
        ["make", "-s", "bench", "BENCH_ARGS=--quick --preset smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [line["benchmark"] for line in lines] == ["model_parsing", "hot_path", "cache_memory"]
    assert lines[0]["jobs"] > 0 and lines[0]["median_seconds"] > 0
    assert lines[1]["watch_us_per_event"] > 0 and lines[1]["create_us_per_request"] > 0
    assert set(lines[1]["paced_watch_us_per_event"]) == {"one by one", "batched"}
    per_pod = lines[2]["bytes_per_pod"]
    assert 0 < per_pod["slim"] < per_pod["managedFields dropped"] < per_pod["as decoded"]
    assert "starting the local cluster" not in done.stdout + done.stderr
    assert "targets" not in done.stdout
