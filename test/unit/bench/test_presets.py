"""The side-by-side presets: sizes name only configurations that run, targets fit them."""

from __future__ import annotations

import pytest

from bench.sidebyside.presets import PRESETS, preset
from bench.sidebyside.runner import running_order
from bench.sidebyside.summary import busiest_first, targets


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_sizes_only_configs_it_runs(name: str) -> None:
    sizes = preset(name)
    names = {c.name for c in sizes.configs}
    assert names
    assert set(sizes.fanout_workers) <= names
    assert set(sizes.throughput_jobs) <= names
    assert set(sizes.raw_reps) <= names
    assert sizes.fanout_workers or sizes.throughput_jobs


def test_unthrottled_fanout_runs_500_workers_where_the_limiter_never_binds() -> None:
    sizes = preset("fanout-unthrottled")
    [config] = sizes.configs
    assert config.pass_flags
    assert config.burst >= sizes.fanout_workers[config.name] == 500
    assert sizes.throughput_jobs == {}
    assert sizes.raw_ceiling


def test_full_preset_compares_at_equal_qps_with_500_and_2000_worker_fanouts() -> None:
    sizes = preset("full")
    assert sizes.reps == 3 and sizes.fanout_repetitions == 3
    assert sizes.unrelated_pods == 5000
    assert all(c.pass_flags and (c.qps, c.burst) == (100, 200) for c in sizes.configs)
    assert sorted(sizes.fanout_workers.values()) == [500, 2000]
    assert sum(sizes.throughput_jobs.values()) == 50
    assert sizes.reference_scenarios == ("fanout", "throughput")
    # Two full runs within 90 minutes: the reference's Running after 2,000 pods is cut.
    assert sizes.running_wait == 120.0 and not sizes.fairness


def test_scale_preset_is_ten_times_the_size_with_the_reference_on_the_fanout_only() -> None:
    sizes = preset("scale")
    assert sizes.fanout_workers == {"equal-100-200": 5000}
    assert sizes.throughput_jobs == {"equal-100-200": 1000}
    assert sizes.unrelated_pods == 50000
    assert sizes.reference_scenarios == ("fanout",)
    assert sizes.fairness and sizes.running_wait is None
    assert sizes.launcher_seconds == 120.0  # long enough for 1,000 jobs to be seen Running
    assert sizes.nodes * 250 >= 5000 + 1 + 2  # the big job's launcher, the small job


@pytest.mark.parametrize(("rep", "first"), [(0, "ours"), (1, "reference"), (2, "ours")])
def test_repetitions_alternate_which_operator_runs_first(rep: int, first: str) -> None:
    order = running_order(rep)
    assert order[0] == first and sorted(order) == ["ours", "reference"]


def test_unknown_preset_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        preset("nope")


def test_a_fanout_only_run_has_only_fanout_targets() -> None:
    created = {"ratio_ours_reference": 0.4, "ratio_ours_raw": 1.1}
    cpu = {"ratio_ours_reference": 1.3}
    summary = {"equal-100-200": {"fanout": {"all_pods_created_s": created, "cpu_s": cpu}}}
    rows = targets(summary)
    assert [(r["target"], r["met"]) for r in rows] == [
        ("fan-out CPU seconds, ours/reference <= 1.0", False),
        ("fan-out all pods created, ours/raw <= 1.2", True),
    ]


def test_latency_targets_also_bound_the_interval_upper_end() -> None:
    p50 = {"ratio_ours_reference": 0.6, "ratio_ours_reference_ci90": [0.5, 1.1]}
    rows = targets({"equal-100-200": {"throughput": {"create_to_pods_ready_p50_s": p50}}})
    assert [(r["value"], r["met"]) for r in rows] == [(0.6, True), (1.1, False)]


def test_api_breakdown_is_ordered_busiest_first_then_by_name() -> None:
    breakdown = {
        "ours": {"create pods": 4.0, "watch pods": 0.01, "list jobs": 0.01},
        "reference": {"create pods": 4.0, "get leases": 0.02, "list jobs": 0.0},
    }
    assert busiest_first(breakdown) == ["create pods", "get leases", "list jobs", "watch pods"]
