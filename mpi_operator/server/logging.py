"""structlog set-up for the operator process.

``json`` (the default) writes one JSON object per line with an ISO-8601 UTC
``timestamp``, the ``level`` and the ``event``; ``console`` is for humans.
Records of the standard ``logging`` module (aiohttp, kubernetes_asyncio) are
rendered the same way. Values under keys that look like credentials are
replaced before rendering, so a careless ``log.info(..., token=t)`` cannot
leak one.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

REDACTED = "[REDACTED]"
_SECRET_KEY_PARTS = (
    "token",
    "password",
    "passwd",
    "authorization",
    "private_key",
    "client_key",
    "ssh_key",
    "credential",
    "bearer",
)


def _is_secret_key(key: str) -> bool:
    lowered = key.lower().replace("-", "_")
    return any(part in lowered for part in _SECRET_KEY_PARTS)


def redact_secrets(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    for key in list(event_dict):
        if key != "event" and _is_secret_key(key):
            event_dict[key] = REDACTED
    return event_dict


def _drop_stdlib_internals(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    event_dict.pop("_record", None)
    event_dict.pop("_from_structlog", None)
    return event_dict


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]


def _renderer(fmt: str, stream: TextIO) -> list[Processor]:
    if fmt == "console":
        colors = bool(getattr(stream, "isatty", lambda: False)())
        return [structlog.dev.ConsoleRenderer(colors=colors)]
    return [
        structlog.processors.StackInfoRenderer(),
        structlog.processors.dict_tracebacks,
        structlog.processors.JSONRenderer(sort_keys=False),
    ]


def configure_logging(fmt: str = "json", level: str = "info", stream: TextIO | None = None) -> None:
    """Configures structlog and the standard library's root logger."""
    if fmt not in ("json", "console"):
        raise ValueError(f"unknown log format {fmt!r}")
    out = sys.stderr if stream is None else stream
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
