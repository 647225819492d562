"""Reaching the API server: every call is bounded by a request timeout (the client's,
or the call's own), and ``$KUBECONFIG`` is read when a client is made, not at import.
On loopback servers the tests start and stop."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeApi, Request
from kubernetes.client import ApiClient, Configuration

from mpi_operator.sdk import MPIJobClient, SDKError, SDKTimeoutError, T9kMPIJobClient


def _api_client(url: str) -> ApiClient:
    configuration = Configuration(host=url)
    configuration.retries = 0
    return ApiClient(configuration)


def _kubeconfig(server: str, path: Path) -> Path:
    return FakeApi(url=server).kubeconfig(path)


CALLS: list[tuple[str, Callable[[MPIJobClient], Any]]] = [
    ("get", lambda c: c.get("pi")),
    ("list", lambda c: c.list()),
    ("create", lambda c: c.create({"metadata": {"name": "pi"}})),
    ("suspend", lambda c: c.suspend("pi")),
    ("delete", lambda c: c.delete("pi")),
    ("logs", lambda c: list(c.logs("pi"))),
    ("worker_logs", lambda c: list(c.worker_logs("pi"))),
]


@pytest.mark.parametrize("call", [c[1] for c in CALLS], ids=[c[0] for c in CALLS])
def test_a_server_that_never_answers_times_out(
    silent_server: str, tmp_path: Path, call: Callable[[MPIJobClient], Any]
) -> None:
    client = MPIJobClient(kubeconfig=_kubeconfig(silent_server, tmp_path / "kc"), request_timeout=1)
    started = time.monotonic()
    with pytest.raises(SDKTimeoutError) as timed_out:
        call(client)
    took = time.monotonic() - started
    assert took < 3, f"took {took:.1f}s"
    assert isinstance(timed_out.value, SDKError) and isinstance(timed_out.value, TimeoutError)
    assert silent_server.removeprefix("http://") in str(timed_out.value)


def test_a_call_overrides_the_clients_request_timeout(silent_server: str, tmp_path: Path) -> None:
    client = T9kMPIJobClient(kubeconfig=_kubeconfig(silent_server, tmp_path / "kc"))
    assert client.request_timeout == 30
    started = time.monotonic()
    with pytest.raises(SDKTimeoutError):
        client.get("pi", request_timeout=0.5)
    assert time.monotonic() - started < 2


def _named(answer: str) -> Callable[[Request], tuple[int, Any]]:
    """Answers every read with a job whose name says which server it came from."""
    return lambda request: (200, {"metadata": {"name": answer, "namespace": "ns"}})


def test_kubeconfig_is_read_when_a_client_is_made(
    fake_api: FakeApi, other_fake_api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$KUBECONFIG set after import, to one file then another: each client uses the
    server (and namespace) of the file named when it was made."""
    fake_api.answer, other_fake_api.answer = _named("first"), _named("second")
    first = fake_api.kubeconfig(tmp_path / "first", namespace="ns-a")
    second = other_fake_api.kubeconfig(tmp_path / "second", namespace="ns-b")
    monkeypatch.setenv("KUBECONFIG", str(first))
    a = MPIJobClient()
    monkeypatch.setenv("KUBECONFIG", str(second))
    b = MPIJobClient()
    assert (a.namespace, b.namespace) == ("ns-a", "ns-b")
    assert a.get("pi").name == "first"
    assert b.get("pi").name == "second"
    assert [r.path for r in fake_api.requests] == [
        "/apis/kubeflow.org/v2beta1/namespaces/ns-a/mpijobs/pi"
    ]
    assert [r.path for r in other_fake_api.requests] == [
        "/apis/kubeflow.org/v2beta1/namespaces/ns-b/mpijobs/pi"
    ]


def _worker_and_its_log(request: Request) -> tuple[int, Any]:
    if request.path.endswith("/log"):
        return 200, "pi is about 3.14\n"
    pod = {
        "metadata": {"name": "pi-worker-0", "namespace": "ns"},
        "spec": {"containers": [{"name": "main", "image": "i"}]},
        "status": {"phase": "Running"},
    }
    return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [pod]}


def test_a_followed_log_is_streamed_with_a_bounded_connection(fake_api: FakeApi) -> None:
    """follow=True through the kubernetes client itself, which validates its arguments
    (it refuses a read timeout of None)."""
    fake_api.answer = _worker_and_its_log
    client = MPIJobClient("ns", api_client=_api_client(fake_api.url))
    assert list(client.worker_logs("pi", 0, follow=True, request_timeout=5)) == ["pi is about 3.14"]
    streamed = fake_api.requests[-1]
    assert (streamed.path, streamed.query["follow"]) == (
        "/api/v1/namespaces/ns/pods/pi-worker-0/log",
        ["true"],
    )
