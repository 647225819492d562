"""Following the launcher's log across its attempts, on scripted pod listings (no API)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from kubernetes.client import (
    V1ContainerState,
    V1ContainerStateRunning,
    V1ContainerStateTerminated,
    V1ContainerStateWaiting,
    V1ContainerStatus,
    V1ObjectMeta,
    V1Pod,
    V1PodSpec,
    V1PodStatus,
)

from mpi_operator.api import v2beta1
from mpi_operator.sdk import LogsUnavailableError, logs
from mpi_operator.sdk._errors import translated
from mpi_operator.sdk.kinds import KUBEFLOW

T0 = datetime.datetime(2026, 11, 25, tzinfo=datetime.UTC)
RUNNING = V1ContainerState(running=V1ContainerStateRunning())
FAILED = V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=1))
DONE = V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=0))
BACKOFF = V1ContainerState(waiting=V1ContainerStateWaiting(reason="CrashLoopBackOff"))


def pod(uid: str, phase: str, state: V1ContainerState, restarts: int = 0) -> V1Pod:
    return V1Pod(
        metadata=V1ObjectMeta(name=f"pi-launcher-{uid}", uid=uid, creation_timestamp=T0),
        spec=V1PodSpec(containers=[{"name": "launcher"}]),
        status=V1PodStatus(
            phase=phase,
            container_statuses=[
                V1ContainerStatus(
                    name="launcher",
                    state=state,
                    restart_count=restarts,
                    image="i",
                    image_id="",
                    ready=False,
                )
            ],
        ),
    )


class Scripted:
    """The parts of a JobClient that following uses: each listing returns the next pods
    of the script (the last one repeats); the job is Succeeded once ``finished``."""

    kind = KUBEFLOW

    def __init__(self, script: list[list[V1Pod]], finished: bool = False) -> None:
        self.script, self.finished, self.listings = script, finished, 0
        self.core = self

    def _translated(self) -> AbstractContextManager[None]:
        return translated()

    def list_namespaced_pod(self, namespace: str, label_selector: str, **_: Any) -> Any:
        pods = self.script[min(self.listings, len(self.script) - 1)]
        self.listings += 1
        return type("PodList", (), {"items": pods})()

    def get(self, name: str, namespace: str) -> v2beta1.MPIJob:
        conditions = [{"type": "Succeeded", "status": "True"}] if self.finished else []
        return v2beta1.MPIJob.model_validate(
            {"metadata": {"name": name}, "status": {"conditions": conditions}}
        )


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Replaces the log stream: each attempt yields one line naming its pod; records
    which pods were streamed. Waits between polls return at once."""
    seen: list[tuple[str, str]] = []

    def stream(client: Any, p: V1Pod, namespace: str, cname: str, _timeout: float) -> Iterator[str]:
        seen.append((p.metadata.uid, cname))
        yield f"attempt in {p.metadata.uid}/{p.status.container_statuses[0].restart_count}"

    monkeypatch.setattr(logs, "_stream", stream)
    monkeypatch.setattr(logs.time, "sleep", lambda _s: None)
    return seen


def follow(client: Scripted, timeout: float = 5) -> list[str]:
    return list(logs.launcher_logs(client, "pi", "ns", True, None, timeout))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "script", "finished", "expected"),
    [
        (
            "one attempt that succeeds",
            [[pod("a", "Running", RUNNING)], [pod("a", "Succeeded", DONE)]],
            False,
            ["attempt in a/0"],
        ),
        (
            "a container restarted after a failed mpirun",
            [
                [pod("a", "Running", RUNNING)],
                [pod("a", "Running", BACKOFF)],
                [pod("a", "Running", RUNNING, restarts=1)],
                [pod("a", "Succeeded", DONE, restarts=1)],
            ],
            False,
            ["attempt in a/0", "attempt in a/1"],
        ),
        (
            "a new launcher pod after a failed one",
            [
                [pod("a", "Failed", FAILED)],
                [pod("a", "Failed", FAILED), pod("b", "Pending", BACKOFF)],
                [pod("a", "Failed", FAILED), pod("b", "Running", RUNNING)],
                [pod("b", "Succeeded", DONE)],
            ],
            False,
            ["attempt in a/0", "attempt in b/0"],
        ),
        (
            "a failed attempt of a job that finished",
            [[pod("a", "Failed", FAILED)]],
            True,
            ["attempt in a/0"],
        ),
    ],
)
def test_follow_streams_each_attempt_once(
    streamed: list[tuple[str, str]],
    name: str,
    script: list[list[V1Pod]],
    finished: bool,
    expected: list[str],
) -> None:
    assert follow(Scripted(script, finished)) == expected, name
    assert all(cname == "launcher" for _, cname in streamed)


def test_follow_ends_when_no_attempt_starts_in_time(streamed: list[tuple[str, str]]) -> None:
    client = Scripted([[pod("a", "Running", RUNNING)], [pod("a", "Running", BACKOFF)]])
    assert follow(client, timeout=0) == ["attempt in a/0"]


def test_follow_without_any_started_launcher_says_why(streamed: list[tuple[str, str]]) -> None:
    client = Scripted([[pod("a", "Pending", BACKOFF)]])
    with pytest.raises(LogsUnavailableError, match="launcher pod pi-launcher-a is Pending"):
        follow(client, timeout=0)
