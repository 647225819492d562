"""The throughput's raw ceiling sends each MPIJob's children as our builders make them,
and the reports show every runner's distance from a ceiling."""

from __future__ import annotations

from typing import Any

from bench.sidebyside.kube import mpijob
from bench.sidebyside.raw_ceilings import children
from bench.sidebyside.report import format_markdown, format_summary
from bench.sidebyside.summary import summarize

UID = "0b5b2a5e-8a43-4a5e-9d8e-1f1f1f1f1f1f"


def _stored(name: str, workers: int) -> dict[str, Any]:
    job = mpijob(name, workers, 5.0)
    job["metadata"].update(namespace="bench", uid=UID, resourceVersion="7")
    return job


def test_a_jobs_children_are_its_service_config_secret_workers_and_launcher() -> None:
    got = children(_stored("job-0001", 4))
    assert [(path, obj["kind"], obj["metadata"]["name"]) for path, obj in got] == [
        ("/api/v1/namespaces/bench/services", "Service", "job-0001"),
        ("/api/v1/namespaces/bench/configmaps", "ConfigMap", "job-0001-config"),
        ("/api/v1/namespaces/bench/secrets", "Secret", "job-0001-ssh"),
        *(("/api/v1/namespaces/bench/pods", "Pod", f"job-0001-worker-{i}") for i in range(4)),
        ("/apis/batch/v1/namespaces/bench/jobs", "Job", "job-0001-launcher"),
    ]


def test_every_child_is_controlled_by_the_stored_mpijob() -> None:
    for _, obj in children(_stored("job-0002", 2)):
        (owner,) = obj["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "MPIJob",
            "job-0002",
            UID,
            True,
        )


def test_the_launchers_completion_annotation_reaches_its_pod_template() -> None:
    launcher = children(_stored("job-0003", 1))[-1][1]
    annotations = launcher["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"kwok.mpi-operator.io/complete-after": "5s"}


def _result() -> dict[str, Any]:
    figures = {"ours": 1.5, "reference": 1.6, "raw-client": 1.2}
    records = [
        {
            "scenario": "throughput",
            "config": "equal-100-200",
            "rep": 0,
            "operator": who,
            "jobs": 50,
            "create_to_pods_ready_p50_s": p50,
        }
        for who, p50 in figures.items()
    ]
    return {
        "generated": "2026-11-28T00:00:00+00:00",
        "records": records,
        "summary": summarize(records),
    }


def test_the_markdown_row_gives_ours_and_the_references_ratio_to_the_ceiling() -> None:
    row = next(line for line in format_markdown(_result()).splitlines() if "pods Ready p50" in line)
    assert "(ours/raw 1.25; reference/raw 1.33)" in row


def test_the_console_line_gives_both_ratios_to_the_ceiling() -> None:
    line = next(
        line
        for line in format_summary(_result()).splitlines()
        if "create_to_pods_ready_p50_s" in line
    )
    assert line.endswith("ours/raw=1.25  reference/raw=1.33")
