"""kube-apiserver's JSON audit log: the policy that selects whom to audit, and reading it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

#: The group of every ServiceAccount's user (``audit_groups=[SERVICE_ACCOUNTS]``).
SERVICE_ACCOUNTS = "system:serviceaccounts"


def audit_args(policy: Path, log: Path, users: Sequence[str], groups: Sequence[str]) -> list[str]:
    """Write an audit policy (level Metadata, stage ResponseComplete, for ``users`` and
    members of ``groups`` only) to ``policy``; return kube-apiserver's flags for it."""
    rules: list[dict[str, Any]] = []
    if users:
        rules.append({"level": "Metadata", "users": list(users)})
    if groups:
        rules.append({"level": "Metadata", "userGroups": list(groups)})
    policy.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "omitStages": ["RequestReceived", "ResponseStarted"],
                "rules": [*rules, {"level": "None"}],
            }
        )
    )
    return [
        f"--audit-policy-file={policy}",
        f"--audit-log-path={log}",
        "--audit-log-maxsize=0",
        "--audit-log-format=json",
    ]


def read_audit_events(path: Path, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
    """The JSON audit events of ``path`` between two byte offsets (a partly written
    last line is skipped)."""
    if not path.exists():
        return []
    with path.open("rb") as f:
        f.seek(start)
        data = f.read() if end is None else f.read(max(0, end - start))
    events: list[dict[str, Any]] = []
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def audit_user(event: dict[str, Any]) -> str:
    """The user an audit event was made by."""
    return str((event.get("user") or {}).get("username") or "")


def audit_code(event: dict[str, Any]) -> int:
    """The HTTP status an audited request was answered with (0 if not recorded)."""
    return int((event.get("responseStatus") or {}).get("code") or 0)
