"""The answer to an MPIJob of either kind that does not parse or validate.

The answer to an MPIJob (of either kind) that does not parse or validate: one
Warning event ``ValidationError`` naming the fields, and a log line; no retry, since
the same object fails the same way until the user changes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from mpi_operator.client import WARNING, EventRecorder
from mpi_operator.client.events import truncate_message

log = structlog.get_logger(__name__)

VALIDATION_ERROR = "ValidationError"


def report_invalid(recorder: EventRecorder, job: Mapping[str, Any], key: str, message: str) -> None:
    """``job``: the MPIJob with its apiVersion and kind (list items may lack them)."""
    log.warning("mpijob is invalid", mpijob=key, api_version=job.get("apiVersion"), error=message)
    recorder.event(
        job, WARNING, VALIDATION_ERROR, truncate_message(f"Found validation errors: {message}")
    )
