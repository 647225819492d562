"""A loopback server for the SDK's unit tests, started and stopped by each test, that
accepts connections and never answers (what the SDK sends to a real API server is
tested against one, in test/e2e/test_sdk.py)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml


def kubeconfig(server: str, path: Path, namespace: str = "default") -> Path:
    """A kubeconfig of ``server`` (no credentials), its context's namespace set."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "loopback", "cluster": {"server": server}}],
        "users": [{"name": "loopback", "user": {}}],
        "contexts": [
            {
                "name": "loopback",
                "context": {"cluster": "loopback", "user": "loopback", "namespace": namespace},
            }
        ],
        "current-context": "loopback",
    }
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def silent_server() -> Iterator[str]:
    """The URL of a loopback server that accepts connections (and reads what is sent)
    but never answers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()
