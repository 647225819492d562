"""etcd's JSON gateway on 127.0.0.1: its health, and compacting its whole keyspace."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

from .access import ClusterError


def healthy(port: int) -> bool:
    """etcd answers ``/health`` with ``"health": "true"``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
        return bool(json.loads(r.read()).get("health") == "true")


def compact(port: int) -> int:
    """Compact etcd at its current revision (physically) and return that revision."""
    base = f"http://127.0.0.1:{port}/v3"
    key = base64.b64encode(b"/registry/").decode()
    rev = int(_post(f"{base}/kv/range", {"key": key, "limit": 1})["header"]["revision"])
    try:
        _post(f"{base}/kv/compaction", {"revision": rev, "physical": True})
    except ClusterError as e:
        if "compacted" not in str(e):  # compacted there already: the same outcome
            raise
    return rev


def _post(url: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        raise ClusterError(f"etcd {url}: {e.code} {e.read().decode(errors='replace')}") from e
