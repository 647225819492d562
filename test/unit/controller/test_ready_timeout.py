"""runPolicy.workersReadyTimeoutSeconds (pure): when it applies and whom it names."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mpi_operator.api.v2beta1 import MPIJob
from mpi_operator.controller.kubeflow.ready_timeout import not_ready_message, ready_seconds_left

NOW = datetime(2026, 11, 25, 3, 1, 0, tzinfo=UTC)


def job(status: dict[str, Any], timeout: int | None = 30, suspend: bool = False) -> MPIJob:
    policy: dict[str, Any] = {"suspend": suspend}
    if timeout is not None:
        policy["workersReadyTimeoutSeconds"] = timeout
    return MPIJob.from_dict({"spec": {"runPolicy": policy}, "status": status})


def cond(type_: str, status: str = "True", at: str = "2026-11-25T03:00:50Z") -> dict[str, Any]:
    return {"type": type_, "status": status, "lastUpdateTime": at, "lastTransitionTime": at}


def worker(name: str, ready: bool) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


STARTED = {"startTime": "2026-11-25T03:00:00Z"}


@pytest.mark.parametrize(
    ("given", "left"),
    [
        (job(STARTED), -30.0),
        (job(STARTED, timeout=120), 60.0),
        (job(STARTED, timeout=None), None),
        (job(STARTED, suspend=True), None),
        (job({**STARTED, "conditions": [cond("Running")]}), None),
        (job({**STARTED, "conditions": [cond("Running", "False")]}), -30.0),
        (job({**STARTED, "conditions": [cond("Restarting")]}), 20.0),
        (job({}), None),
    ],
)
def test_the_clock_runs_from_start_resume_or_restart_until_the_job_runs(
    given: MPIJob, left: float | None
) -> None:
    assert ready_seconds_left(given, NOW) == left


def test_the_workers_not_ready_are_named() -> None:
    workers = [
        worker("pi-worker-0", True),
        worker("pi-worker-1", False),
        worker("pi-worker-2", False),
    ]
    assert not_ready_message(job(STARTED), workers, NOW) == (
        "2/3 workers were not Ready within 30s: pi-worker-1, pi-worker-2"
    )
    assert not_ready_message(job(STARTED, timeout=120), workers, NOW) is None
    assert not_ready_message(job(STARTED), [worker("pi-worker-0", True)], NOW) is None
    many = [worker(f"w-{i}", False) for i in range(12)]
    message = not_ready_message(job(STARTED), many, NOW)
    assert message is not None and message.endswith("w-8, w-9, ...")
