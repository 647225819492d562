"""bench.sync_cost drives whole job lifecycles through the seam and times the syncs."""

from __future__ import annotations

from bench import sync_cost


def test_one_lifecycle_takes_eight_syncs_and_some_cpu() -> None:
    result = sync_cost.run(jobs=2, repetitions=1)
    assert result["benchmark"] == "sync_cost"
    # Created, workers Ready (then the launcher), launcher running, Running written,
    # launcher done, Succeeded written: each converges in a sync that writes nothing.
    assert result["syncs_per_job"] == 8.0
    assert result["cpu_ms_per_job"] > 0
    assert len(result["rounds_ms"]) == 1
