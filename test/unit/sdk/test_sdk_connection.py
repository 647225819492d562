"""Reaching the API server: every call is bounded by a request timeout (the client's,
or the call's own), and ``$KUBECONFIG`` is read when a client is made, not at import.
On loopback servers the tests start and stop."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import kubeconfig

from mpi_operator.sdk import MPIJobClient, SDKError, SDKTimeoutError, T9kMPIJobClient

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
    client = MPIJobClient(kubeconfig=kubeconfig(silent_server, tmp_path / "kc"), request_timeout=1)
    started = time.monotonic()
    with pytest.raises(SDKTimeoutError) as timed_out:
        call(client)
    took = time.monotonic() - started
    assert took < 3, f"took {took:.1f}s"
    assert isinstance(timed_out.value, SDKError) and isinstance(timed_out.value, TimeoutError)
    assert silent_server.removeprefix("http://") in str(timed_out.value)


def test_a_call_overrides_the_clients_request_timeout(silent_server: str, tmp_path: Path) -> None:
    client = T9kMPIJobClient(kubeconfig=kubeconfig(silent_server, tmp_path / "kc"))
    assert client.request_timeout == 30
    started = time.monotonic()
    with pytest.raises(SDKTimeoutError):
        client.get("pi", request_timeout=0.5)
    assert time.monotonic() - started < 2


def test_kubeconfig_is_read_when_a_client_is_made(
    silent_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$KUBECONFIG set after import, to one file then another: each client uses the
    server (and namespace) of the file named when it was made (a call's timeout names
    the server it waited for)."""
    first = kubeconfig(silent_server, tmp_path / "first", namespace="ns-a")
    elsewhere = "http://127.0.0.2:9"  # nothing listens: refused at once
    second = kubeconfig(elsewhere, tmp_path / "second", namespace="ns-b")
    monkeypatch.setenv("KUBECONFIG", str(first))
    a = MPIJobClient(request_timeout=0.5)
    monkeypatch.setenv("KUBECONFIG", str(second))
    b = MPIJobClient(request_timeout=0.5)
    assert (a.namespace, b.namespace) == ("ns-a", "ns-b")
    with pytest.raises(SDKTimeoutError) as waited:
        a.get("pi")
    assert silent_server.removeprefix("http://") in str(waited.value)
    with pytest.raises(SDKError) as refused:
        b.get("pi")
    assert "127.0.0.2" in str(refused.value)
