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
credentials (padded or not), bare JWTs and the ``user:password@`` of URLs are cut
out of every string, exception messages included.

Keys are matched case-insensitively, ``-`` and ``_`` alike, in two ways:

* a key *containing* a credential word (``token``, ``password``, ``authorization``,
  ``cookie``, ``api_key`` ...) loses its whole value, whatever its type: so do
  ``access_token``, ``Set-Cookie``, ``Proxy-Authorization`` and ``X-Api-Key``;
* a key *ending* in ``secret`` (``secret``, ``client_secret``, ``clientSecret``) loses
  any value but an object (a string or a list of them is the secret itself), while
  an object under it is walked like any other: a pod's ``volumes[].secret`` is a
  SecretVolumeSource and a ``secret`` field may hold a Secret object, whose
  structure helps and whose credential-named keys are cut anyway. Keys that merely
  start with the word are left alone: ``secretName``, ``secretRef`` and
  ``imagePullSecrets`` name Secrets and hold no secret material, and a log without
  them is harder to act on.

Cheap enough for every line: one precompiled regular expression per string (its
alternatives each start with a fixed word or character class, none backtracks over
more than a token), a second only for text containing ``://``, and one lower-casing
per dict key.
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
    "cookie",
    "api_key",
    "apikey",
)
# Keys ending so (after lower-casing, "-" as "_") lose any value but an object.
_SECRET_KEY_ENDING = "secret"
# A PEM block (to its END line, or to the end of a truncated string); the same
# in base64 ("-----BEGIN" at each of the three byte alignments, and what
# follows); a bearer token (8 characters or more: not "the bearer of"); a Basic
# credential (checked in _replacement: it must be base64 of "user:password", so
# "basic information" stays); a bare JWT (base64url of '{"', twice, then dots:
# ServiceAccount and OIDC tokens outside any header, as an exec plugin prints them);
_SECRET_TEXT = re.compile(
    r"-----BEGIN [A-Z0-9 ]*-----.*?(?:-----END [A-Z0-9 ]*-----|\Z)"
    r"|(?:LS0tLS1CRUdJT|0tLS0tQkVHSU|tLS0tLUJFR0lO)[A-Za-z0-9+/]*=*"
    r"|(?P<bearer>\b(?i:bearer)\s+)[A-Za-z0-9\-._~+/]{8,}=*"
    r"|(?P<basic>\b(?i:basic)\s+)(?P<userpass>[A-Za-z0-9+/]{3,}={0,2})(?![A-Za-z0-9+/=])"
    r"|\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
    re.DOTALL,
)
# A URL's userinfo when it has a password (after "://", up to "@": "git@" stays);
# searched apart, and only in text with "://", so that other text pays nothing.
_URL_USERINFO = re.compile(r"(?<=://)[^\s/?#@:]*:[^\s/?#@]*@")
# Deeper structures are rendered as text (and scrubbed as such).
_MAX_DEPTH = 12


def _normal_key(key: str) -> str:
    return key.lower().replace("-", "_")


def _is_secret_key(key: str) -> bool:
    """A key whose whole value is cut, whatever its type."""
    lowered = _normal_key(key)
    return any(part in lowered for part in _SECRET_KEY_PARTS)


def _scrub_item(key: Any, value: Any, depth: int) -> Any:
    if isinstance(key, str):
        if _is_secret_key(key):
            return REDACTED
        if _normal_key(key).endswith(_SECRET_KEY_ENDING) and not isinstance(value, dict):
            return None if value is None else REDACTED
    return _scrub(value, depth + 1)


def scrub_text(text: str) -> str:
    """``text`` with PEM blocks (plain or base64), bearer tokens, Basic credentials,
    JWTs and URLs' ``user:password`` replaced."""
    text = _SECRET_TEXT.sub(_replacement, text)
    return _URL_USERINFO.sub(REDACTED + "@", text) if "://" in text else text


def _is_user_password(encoded: str) -> bool:
    """Whether ``encoded`` is base64 (padded or not, as some clients send it) of
    printable ``user:password`` text: "Basic information" decodes to bytes that
    are not."""
    padded = encoded + "=" * (-len(encoded) % 4)
    try:
        decoded = base64.b64decode(padded, validate=True).decode()
    except ValueError:  # not base64, or not UTF-8 (UnicodeDecodeError)
        return False
    return ":" in decoded and decoded.isprintable()


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
            return {k: _scrub_item(k, v, depth) for k, v in value.items()}
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
