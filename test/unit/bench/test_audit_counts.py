"""The operator's requests counted from the API server's audit log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.sidebyside.cluster import OPERATOR_USER, audit_counts


def event(
    verb: str, resource: str, name: str, user: str = OPERATOR_USER, **ref: str
) -> dict[str, Any]:
    return {
        "verb": verb,
        "user": {"username": user},
        "objectRef": {"resource": resource, "name": name, **ref},
        "responseStatus": {"code": 200},
        "requestReceivedTimestamp": "2026-11-28T01:00:00.000000Z",
        "stageTimestamp": "2026-11-28T01:00:00.010000Z",
    }


def test_status_and_hostfile_updates_are_counted_per_object_and_nothing_else_is(
    tmp_path: Path,
) -> None:
    log = tmp_path / "audit.log"
    events = [
        event("update", "mpijobs", "fanout", subresource="status"),
        event("update", "mpijobs", "fanout", subresource="status"),
        event("update", "mpijobs", "small", subresource="status"),
        event("update", "configmaps", "fanout-config"),
        event("create", "configmaps", "small-config"),
        event("create", "pods", "fanout-worker-0"),
        event("update", "configmaps", "fanout-config", user="someone-else"),
    ]
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    counts = audit_counts(log, 0)
    assert counts["total"] == 6
    assert counts["updates_by_object"] == {
        "update mpijobs/status fanout": 2,
        "update mpijobs/status small": 1,
        "update configmaps fanout-config": 1,
    }
