"""Per-job figures of the throughput scenario, from what the harness's watches saw."""

from __future__ import annotations

from typing import cast

from bench.sidebyside.job_times import all_pods_ready, percentile, step_medians, step_times
from bench.sidebyside.kube import JOB_NAME_LABEL, JOB_ROLE_LABEL, Watch
from devcluster import LocalCluster


def watched(pods: dict[str, tuple[str, float | None]]) -> Watch:
    """A pod Watch that has seen ``name -> (job, first time Ready or None)``."""
    w = Watch(cast(LocalCluster, None), "/api/v1/namespaces/ns/pods")  # never started
    for name, (job, ready) in pods.items():
        w.labels[name] = {JOB_NAME_LABEL: job}
        w.first_seen[name] = 0.0
        if ready is not None:
            w.conditions[(name, "Ready")] = ready
    return w


def test_a_job_is_running_when_the_last_of_its_pods_is_ready() -> None:
    w = watched(
        {
            "a-launcher-x": ("a", 3.0),
            "a-worker-0": ("a", 1.0),
            "a-worker-1": ("a", 5.5),
            "b-launcher-y": ("b", 2.0),
            "b-worker-0": ("b", 2.5),
            "b-worker-1": ("b", None),  # never Ready: b is left out
        }
    )
    assert all_pods_ready(w, per_job=3) == {"a": 5.5}


def test_pods_of_no_job_and_other_conditions_do_not_count() -> None:
    w = watched({"a-launcher-x": ("a", 1.0), "a-worker-0": ("a", 2.0)})
    w.conditions[("a-worker-0", "PodScheduled")] = 0.5
    w.labels["stray"] = {}
    w.conditions[("stray", "Ready")] = 9.0
    assert all_pods_ready(w, per_job=2) == {"a": 2.0}
    assert all_pods_ready(w, per_job=3) == {}


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([4.0, 1.0, 3.0], 99) == 4.0
    assert percentile([7.0], 50) == 7.0


def test_each_step_is_when_the_last_of_its_pods_got_there() -> None:
    w = watched({"a-launcher-x": ("a", 4.0), "a-worker-0": ("a", 3.0), "a-worker-1": ("a", 5.0)})
    w.labels["a-launcher-x"][JOB_ROLE_LABEL] = "launcher"
    for name, seen, scheduled in (("a-worker-0", 1.0, 2.0), ("a-worker-1", 1.5, 2.5)):
        w.labels[name][JOB_ROLE_LABEL] = "worker"
        w.first_seen[name] = seen
        w.conditions[(name, "PodScheduled")] = scheduled
    w.first_seen["a-launcher-x"] = 2.0
    w.conditions[("a-launcher-x", "PodScheduled")] = 3.5
    steps = step_times(w, per_job=3)
    assert steps == {
        "workers_exist": {"a": 1.5},
        "launcher_exists": {"a": 2.0},
        "scheduled": {"a": 3.5},
        "ready": {"a": 5.0},
    }
    assert step_medians(steps, {"a": 0.5}) == {
        "create_to_workers_exist_p50_s": 1.0,
        "create_to_launcher_exists_p50_s": 1.5,
        "create_to_scheduled_p50_s": 3.0,
    }


def test_a_job_short_of_pods_at_a_step_is_left_out_of_it() -> None:
    w = watched({"b-worker-0": ("b", None)})  # one of two workers; no launcher yet
    w.labels["b-worker-0"][JOB_ROLE_LABEL] = "worker"
    steps = step_times(w, per_job=3)
    assert steps == {"workers_exist": {}, "launcher_exists": {}, "scheduled": {}, "ready": {}}
    assert set(step_medians(steps, {"b": 0.0}).values()) == {None}
