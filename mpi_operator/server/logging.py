"""structlog set-up for the operator process.

``json`` (the default) writes one JSON object per line with an ISO-8601 UTC
``timestamp``, the ``level`` and the ``event``; ``console`` is for humans.
Records of the standard ``logging`` module (aiohttp, kubernetes_asyncio) are
rendered the same way.

No secret reaches a log line, tracebacks included: tracebacks are rendered
without local variables (which can hold request headers and key material),
and just before rendering, every value is walked (nested dicts and lists
too): values under keys that look like credentials are replaced, and PEM
blocks (also base64-encoded, as in a Secret's ``data``), bearer tokens, Basic
credentials and bare JWTs are cut out of every string, exception messages included.
"""

from __future__ import annotations

import base64
import logging
import re
import sys
from typing import Any, TextIO

import structlog
from structlog.tracebacks import ExceptionDictTransformer
from structlog.typing import EventDict, Processor, WrappedLogger

REDACTED = "[REDACTED]"
_SECRET_KEY_PARTS = (
    "token",
    "password",
    "passwd",
    "authorization",
    "private_key",
    "privatekey",
    "client_key",
    "ssh_key",
    "credential",
    "bearer",
)
# A PEM block (to its END line, or to the end of a truncated string); the same
# in base64 ("-----BEGIN" at each of the three byte alignments, and what
# follows); a bearer token (8 characters or more: not "the bearer of"); a Basic
# credential (checked in _replacement: it must be base64 of "user:password", so
# "basic information" stays); a bare JWT (base64url of '{"', twice, then dots:
# ServiceAccount and OIDC tokens outside any header, as an exec plugin prints them).
_SECRET_TEXT = re.compile(
    r"-----BEGIN [A-Z0-9 ]*-----.*?(?:-----END [A-Z0-9 ]*-----|\Z)"
    r"|(?:LS0tLS1CRUdJT|0tLS0tQkVHSU|tLS0tLUJFR0lO)[A-Za-z0-9+/]*=*"
    r"|(?P<bearer>\b(?i:bearer)\s+)[A-Za-z0-9\-._~+/]{8,}=*"
    r"|(?P<basic>\b(?i:basic)\s+)(?P<userpass>[A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])"
    r"|\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
    re.DOTALL,
)
# Deeper structures are rendered as text (and scrubbed as such).
_MAX_DEPTH = 12


def _is_secret_key(key: str) -> bool:
    lowered = key.lower().replace("-", "_")
    return any(part in lowered for part in _SECRET_KEY_PARTS)


def scrub_text(text: str) -> str:
    """``text`` with PEM blocks (plain or base64), bearer tokens, Basic credentials
    and JWTs replaced."""
    return _SECRET_TEXT.sub(_replacement, text)


def _is_user_password(encoded: str) -> bool:
    try:
        decoded = base64.b64decode(encoded, validate=True)
    except ValueError:
        return False
    return b":" in decoded


def _replacement(match: re.Match[str]) -> str:
    if match.group("basic") is not None:
        if not _is_user_password(match.group("userpass")):
            return match.group(0)
        return match.group("basic") + REDACTED
    return (match.group("bearer") or "") + REDACTED


def _scrub(value: Any, depth: int = 0) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return scrub_text(value)
    if depth < _MAX_DEPTH:
        if isinstance(value, dict):
            return {
                k: REDACTED if isinstance(k, str) and _is_secret_key(k) else _scrub(v, depth + 1)
                for k, v in value.items()
            }
        if isinstance(value, (list, tuple, set, frozenset)):
            return [_scrub(v, depth + 1) for v in value]
    # What the renderers would print for it (repr), scrubbed.
    return scrub_text(repr(value))


def redact_secrets(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """Replaces credential-looking keys' values and secret-looking text, at any depth."""
    scrubbed: EventDict = _scrub(dict(event_dict))
    return scrubbed


def _drop_stdlib_internals(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    event_dict.pop("_record", None)
    event_dict.pop("_from_structlog", None)
    return event_dict


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def _renderer(fmt: str, stream: TextIO) -> list[Processor]:
    """Exceptions become text or dicts without locals, then everything is
    scrubbed, then rendered."""
    if fmt == "console":
        colors = bool(getattr(stream, "isatty", lambda: False)())
        return [
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            redact_secrets,
            structlog.dev.ConsoleRenderer(
                colors=colors, exception_formatter=structlog.dev.plain_traceback
            ),
        ]
    return [
        structlog.processors.StackInfoRenderer(),
        structlog.processors.ExceptionRenderer(ExceptionDictTransformer(show_locals=False)),
        redact_secrets,
        structlog.processors.JSONRenderer(sort_keys=False),
    ]


def resolve_format(fmt: str, stream: TextIO) -> str:
    """``auto`` made concrete: ``console`` for a terminal (a person reads it), else
    ``json`` (a log collector does)."""
    if fmt != "auto":
        return fmt
    isatty = getattr(stream, "isatty", None)
    return "console" if callable(isatty) and isatty() else "json"


def configure_logging(fmt: str = "json", level: str = "info", stream: TextIO | None = None) -> None:
    """Configures structlog and the standard library's root logger. ``fmt`` ``auto``:
    ``console`` when the stream is a terminal, else ``json``."""
    if fmt not in ("auto", "json", "console"):
        raise ValueError(f"unknown log format {fmt!r}")
    out = sys.stderr if stream is None else stream
    fmt = resolve_format(fmt, out)
    numeric = logging.getLevelNamesMapping()[level.upper()]
    structlog.configure(
        processors=[*_shared_processors(), *_renderer(fmt, out)],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[
            structlog.stdlib.add_logger_name,
            *_shared_processors(),
            structlog.stdlib.ExtraAdder(),
        ],
        processors=[_drop_stdlib_internals, *_renderer(fmt, out)],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    # Access logs of the health probes would drown everything else.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
