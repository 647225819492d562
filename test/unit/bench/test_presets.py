"""The side-by-side presets: sizes name only configurations that run, targets fit them."""

from __future__ import annotations

import pytest

from bench.sidebyside.report import busiest_first, targets
from bench.sidebyside.runner import PRESETS, SHIPPED, preset


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


def test_full_preset_is_the_issue_sizes() -> None:
    sizes = preset("full")
    assert sizes.reps == 3
    assert sizes.fanout_reps == 5
    assert sizes.unrelated_pods == 5000
    assert [c.name for c in sizes.configs] == ["equal-100-200", SHIPPED.name, "equal-1000-2000"]
    assert set(sizes.fanout_workers.values()) == {500}
    assert sizes.throughput_jobs == {"equal-100-200": 200, SHIPPED.name: 200}


def test_full_preset_ends_with_the_unthrottled_fanout() -> None:
    full, alone = preset("full"), preset("fanout-unthrottled")
    assert full.configs[-1] == alone.configs[0]
    assert full.fanout_workers[alone.configs[0].name] == alone.fanout_workers[alone.configs[0].name]


def test_unknown_preset_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        preset("nope")


def test_a_fanout_only_run_has_only_fanout_targets() -> None:
    created = {"ratio_ours_reference": 0.4, "ratio_ours_raw": 1.1}
    summary = {"equal-1000-2000": {"fanout": {"all_pods_created_s": created}}}
    rows = targets(summary)
    assert [(r["target"], r["met"]) for r in rows] == [
        ("fan-out all pods created, ours/reference <= 0.7", True),
        ("fan-out all pods created, ours/raw ceiling <= 1.5", True),
    ]


def test_api_breakdown_is_ordered_busiest_first_then_by_name() -> None:
    breakdown = {
        "ours": {"create pods": 4.0, "watch pods": 0.01, "list jobs": 0.01},
        "reference": {"create pods": 4.0, "get leases": 0.02, "list jobs": 0.0},
    }
    assert busiest_first(breakdown) == ["create pods", "get leases", "list jobs", "watch pods"]
