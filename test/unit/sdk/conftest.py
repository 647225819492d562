"""Loopback servers for the SDK's unit tests, started and stopped by each test: a fake
API server that records each request and answers as a script says, and a server that
accepts connections and never answers."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    headers: dict[str, str]


Answer = tuple[int, Any]
"""An answer: the HTTP status and a JSON body (a str is sent as text)."""


@dataclass
class FakeApi:
    """Each request is recorded; ``answer`` (a request -> an answer) gives the reply."""

    url: str = ""
    requests: list[Request] = field(default_factory=list)
    answer: Callable[[Request], Answer] = lambda request: (404, {"kind": "Status"})

    def kubeconfig(self, path: Path, namespace: str = "default") -> Path:
        """A kubeconfig of this server (no credentials), its context's namespace set."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {}}],
            "contexts": [
                {
                    "name": "fake",
                    "context": {"cluster": "fake", "user": "fake", "namespace": namespace},
                }
            ],
            "current-context": "fake",
        }
        path.write_text(yaml.safe_dump(config))
        return path


def _handler(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            url = urlsplit(self.path)
            request = Request(
                self.command,
                url.path,
                parse_qs(url.query),
                json.loads(raw) if raw else None,
                dict(self.headers),
            )
            api.requests.append(request)
            status, body = api.answer(request)
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            kind = "text/plain" if isinstance(body, str) else "application/json"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def _serve() -> Iterator[FakeApi]:
    api = FakeApi()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def fake_api() -> Iterator[FakeApi]:
    yield from _serve()


@pytest.fixture
def other_fake_api() -> Iterator[FakeApi]:
    """A second fake API server, beside :func:`fake_api`."""
    yield from _serve()


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
