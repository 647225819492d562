"""Waiting for a job's condition: a watch on the one job, re-read when the watch ends,
with a deadline, and a progress line each time its status summary changes."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubernetes.watch import Watch

from ._errors import translated
from .errors import ApiError, JobFailedError, NotFoundError, WaitTimeoutError
from .kinds import JobT

if TYPE_CHECKING:
    from .client import JobClient

_WATCH_SECONDS = 30
"""The longest one watch request lasts; the job is re-read after each."""


class _Printer:
    """Prints ``<seconds> <Kind> <ns>/<name>: <summary>`` when the summary changes."""

    def __init__(self, describe: Callable[[Any], str], started: float) -> None:
        self.describe, self.started, self.last = describe, started, ""

    def __call__(self, job: Any) -> None:
        text = f"{job.kind} {job.namespace}/{job.name}: {self.describe(job)}"
        if text != self.last:
            self.last = text
            print(f"[{time.monotonic() - self.started:6.1f}s] {text}", file=sys.stdout, flush=True)


def reporter(
    progress: bool | Callable[[Any], None], summary: Callable[[Any], str]
) -> Callable[[Any], None]:
    """What ``progress`` asks for: a callable as it is; True: a :class:`_Printer`."""
    if callable(progress):
        return progress
    if progress:
        return _Printer(summary, time.monotonic())
    return lambda job: None


def _next_version(client: JobClient[JobT], job: JobT, remaining: float) -> JobT:
    """The job's next version from a watch from its resourceVersion, or the job as read
    again when the watch ended without one (timeout, expired resourceVersion)."""
    kind, name, ns = client.kind, job.name, job.namespace
    seconds = max(1, min(_WATCH_SECONDS, int(remaining + 0.999)))
    watcher = Watch()
    try:
        with translated():
            for event in watcher.stream(
                client.custom_objects.list_namespaced_custom_object,
                kind.group,
                kind.version,
                ns,
                kind.plural,
                field_selector=f"metadata.name={name}",
                resource_version=job.metadata.get("resourceVersion"),
                timeout_seconds=seconds,
                _request_timeout=seconds + 10,
            ):
                if event.get("type") == "DELETED":
                    raise NotFoundError(404, "NotFound", f"{kind.kind} {ns}/{name} was deleted")
                if event.get("type") in ("ADDED", "MODIFIED"):
                    return kind.model.from_dict(event["object"])
    except ApiError as e:
        if e.status != 410:  # an expired resourceVersion: read the job again below
            raise
    except Exception:  # a broken connection: read the job again after a pause
        time.sleep(min(1.0, max(remaining, 0)))
    finally:
        watcher.stop()
    return client.get(name, ns)


def wait(
    client: JobClient[JobT],
    name: str,
    condition: str,
    namespace: str,
    timeout: float,
    progress: bool | Callable[[Any], None],
) -> JobT:
    kind = client.kind
    target = kind.check_condition(condition)
    deadline = time.monotonic() + timeout
    report = reporter(progress, kind.summary)
    job = client.get(name, namespace)
    while True:
        report(job)
        if kind.reached(job, target):
            return job
        if kind.failed(job):
            raise JobFailedError(f"{kind.kind} {namespace}/{name} failed: {kind.summary(job)}", job)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeoutError(
                f"{kind.kind} {namespace}/{name} not {target} after {timeout:g}s: "
                f"{kind.summary(job)}",
                job,
            )
        job = _next_version(client, job, remaining)
