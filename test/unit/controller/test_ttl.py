"""When a finished MPIJob is due for deletion under ttlSecondsAfterFinishedPolicy (pure)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mpi_operator.api.v2beta1 import MPIJob
from mpi_operator.controller.kubeflow.ttl import seconds_left

NOW = datetime(2026, 11, 25, 3, 0, 10, tzinfo=UTC)


def job(completion: str | None, **run_policy: Any) -> MPIJob:
    status = {"completionTime": completion} if completion else {}
    return MPIJob.from_dict({"spec": {"runPolicy": run_policy}, "status": status})


@pytest.mark.parametrize(
    ("given", "left"),
    [
        (job("2026-11-25T03:00:00Z", ttlSecondsAfterFinished=60), None),
        (
            job(
                "2026-11-25T03:00:00Z",
                ttlSecondsAfterFinished=60,
                ttlSecondsAfterFinishedPolicy="Launcher",
            ),
            None,
        ),
        (
            job(
                "2026-11-25T03:00:00Z",
                ttlSecondsAfterFinished=60,
                ttlSecondsAfterFinishedPolicy="MPIJob",
            ),
            50.0,
        ),
        (
            job(
                "2026-11-25T03:00:00Z",
                ttlSecondsAfterFinished=0,
                ttlSecondsAfterFinishedPolicy="MPIJob",
            ),
            -10.0,
        ),
        (job(None, ttlSecondsAfterFinished=5, ttlSecondsAfterFinishedPolicy="MPIJob"), None),
        (job("2026-11-25T03:00:00Z", ttlSecondsAfterFinishedPolicy="MPIJob"), None),
        (job("yesterday", ttlSecondsAfterFinished=5, ttlSecondsAfterFinishedPolicy="MPIJob"), None),
    ],
)
def test_only_an_opted_in_finished_job_expires(given: MPIJob, left: float | None) -> None:
    assert seconds_left(given, NOW) == left
