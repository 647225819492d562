"""structlog configuration: JSON lines in production, console for humans, no secrets."""

from __future__ import annotations

import base64
import io
import json
import logging
from collections.abc import Iterator
from datetime import datetime

import pytest
import structlog

from mpi_operator.server.logging import REDACTED, configure_logging


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        structlog.configure(**saved)
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in handlers:
            root.addHandler(h)
        root.setLevel(level)


def _lines(stream: io.StringIO) -> list[str]:
    return [line for line in stream.getvalue().splitlines() if line]


def test_json_line_with_bound_mpijob_key() -> None:
    out = io.StringIO()
    configure_logging("json", "info", stream=out)
    structlog.get_logger("mpi_operator.controller").bind(mpijob="team/pi").info("synced", workers=2)
    lines = _lines(out)
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["event"] == "synced"
    assert record["mpijob"] == "team/pi"
    assert record["workers"] == 2
    assert record["level"] == "info"
    stamp = datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))
    assert stamp.utcoffset() is not None and stamp.utcoffset().total_seconds() == 0  # type: ignore[union-attr]


def test_level_filters() -> None:
    out = io.StringIO()
    configure_logging("json", "warning", stream=out)
    log = structlog.get_logger()
    log.info("quiet")
    log.debug("quieter")
    log.warning("loud")
    assert [json.loads(line)["event"] for line in _lines(out)] == ["loud"]


def test_secrets_are_redacted() -> None:
    out = io.StringIO()
    configure_logging("json", "debug", stream=out)
    structlog.get_logger().info(
        "config", token="abc", bearer_token="x", client_key_data="k", password="p", secret="job-ssh"
    )
    record = json.loads(_lines(out)[0])
    assert record["token"] == record["bearer_token"] == record["client_key_data"] == REDACTED
    assert record["password"] == REDACTED
    # A string under "secret" is taken for the secret itself (a Secret's name is
    # logged as secretName, which stays; see test_secret_named_keys_are_redacted).
    assert record["secret"] == REDACTED
    assert "abc" not in out.getvalue()


def test_exceptions_are_one_json_line() -> None:
    out = io.StringIO()
    configure_logging("json", "info", stream=out)
    try:
        raise ValueError("boom")
    except ValueError:
        structlog.get_logger().exception("failed")
    lines = _lines(out)
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["level"] == "error"
    assert "ValueError" in json.dumps(record["exception"])


def test_stdlib_records_render_as_json() -> None:
    out = io.StringIO()
    configure_logging("json", "info", stream=out)
    logging.getLogger("aiohttp.server").warning("stdlib %s", "says hi")
    record = json.loads(_lines(out)[0])
    assert record["event"] == "stdlib says hi"
    assert record["level"] == "warning"
    assert record["logger"] == "aiohttp.server"
    assert "timestamp" in record


def test_console_format_is_not_json() -> None:
    out = io.StringIO()
    configure_logging("console", "info", stream=out)
    structlog.get_logger().info("hello", mpijob="team/pi")
    text = out.getvalue()
    assert "hello" in text and "mpijob" in text and "team/pi" in text
    with pytest.raises(ValueError):
        json.loads(text)


def test_unknown_format_rejected() -> None:
    with pytest.raises(ValueError):
        configure_logging("xml", "info", stream=io.StringIO())


# -- secrets at any depth, in any text, and in tracebacks ------------------------------------

_PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)
_KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
_B64 = base64.b64encode(_PEM.encode()).decode()
# A ServiceAccount token as an exec plugin might print it (header, claims, signature).
_JWT = (
    "eyJhbGciOiJSUzI1NiIsImtpZCI6InRlc3QifQ"
    ".eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6bXBpIn0"
    ".c2lnbmF0dXJlLWJ5dGVzLW9mLXRoZS1rZXk"
)
# A local variable's value that matches no pattern: only "no locals" keeps it out.
_PLAIN_SECRET = "hunter2-plain-local-value"


def _record(**fields: object) -> tuple[dict[str, object], str]:
    out = io.StringIO()
    configure_logging("json", "debug", stream=out)
    structlog.get_logger().info("event", **fields)
    text = out.getvalue()
    return json.loads(_lines(out)[0]), text


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"request": {"headers": {"Authorization": "Basic dXNlcjpwYXNz"}}}, ["request", "headers"]),
        ({"items": [{"password": "p4ss"}, {"client-key-data": "a2V5"}]}, ["items"]),
        ({"secret": {"data": {"ssh-privatekey": "c2VjcmV0"}}}, ["secret", "data"]),
        ({"config": ({"bearer_token": "abc.def"},)}, ["config"]),
    ],
    ids=["header", "list", "secret-data", "tuple"],
)
def test_nested_credential_keys_are_redacted(fields: dict[str, object], path: list[str]) -> None:
    record, text = _record(**fields)
    for secret in ("dXNlcjpwYXNz", "p4ss", "a2V5", "c2VjcmV0", "abc.def"):
        assert secret not in text
    assert REDACTED in text
    node: object = record
    for key in path:
        assert isinstance(node, dict)
        node = node[key]
    assert node  # the structure is kept, only the values go


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        (f"key: {_PEM} then more", _KEY_BODY),
        (f"repr: {_PEM!r}", _KEY_BODY),
        (f"truncated: {_PEM[:90]}", "b3BlbnNzaC1rZXkt"),
        (f"data={_B64}", _B64[:40]),
        (f"embedded {base64.b64encode(('x' + _PEM).encode()).decode()}", "tLS0tQkVHSU4g"),
        (f"embedded {base64.b64encode(('xy' + _PEM).encode()).decode()}", "LUJFR0lOIE9"),
        ("header Authorization: Bearer eyJhbGciOi.eyJzdWIi.c2lnbmF0dXJl", "eyJhbGciOi"),
        ("bearer   abc-DEF_123~+/=", "abc-DEF_123"),
        ("Authorization: Basic YWRtaW46czNjcjN0LXBhc3M=", "YWRtaW46czNjcjN0"),
        ("sent basic dTpw with it", "dTpw"),
        (f"exec plugin said: {_JWT} (expired?)", _JWT.split(".")[1]),
        (f"token={_JWT}", _JWT.split(".")[2]),
    ],
    ids=[
        "pem",
        "pem-repr",
        "pem-truncated",
        "base64",
        "base64+1",
        "base64+2",
        "bearer",
        "spaces",
        "basic",
        "basic-short",
        "jwt",
        "jwt-after-equals",
    ],
)
def test_secret_text_is_scrubbed_everywhere(text: str, gone: str) -> None:
    record, raw = _record(detail=text, nested={"list": [text]})
    assert gone not in raw
    assert record["detail"] == record["nested"]["list"][0]  # type: ignore[index]
    assert REDACTED in str(record["detail"])


# user:password, admin:s3cr3t! and u:pw in base64 without their "=" padding.
_UNPADDED = ("dXNlcjpwYXNzd29yZA", "YWRtaW46czNjcjN0IQ", "dTpwdw")


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        (f"Authorization: Basic {_UNPADDED[0]}", _UNPADDED[0]),
        (f"headers {{'Authorization': 'basic {_UNPADDED[1]}'}}", _UNPADDED[1]),
        (f"sent BASIC {_UNPADDED[2]}, got 401", _UNPADDED[2]),
    ],
    ids=["header", "repr", "short"],
)
def test_unpadded_basic_credentials_are_scrubbed(text: str, gone: str) -> None:
    record, raw = _record(detail=text)
    assert gone not in raw
    assert "asic [REDACTED]" in str(record["detail"]) or "ASIC [REDACTED]" in raw


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("GET https://user:pass@host/ failed", "GET https://[REDACTED]@host/ failed"),
        ("postgres://admin:hunter2@db:5432/jobs", "postgres://[REDACTED]@db:5432/jobs"),
        (
            "proxy http://u:p%40ss:w@proxy:3128 refused",
            "proxy http://[REDACTED]@proxy:3128 refused",
        ),
        (
            "url='https://:tok3n@registry.example/v2'",
            "url='https://[REDACTED]@registry.example/v2'",
        ),
    ],
    ids=["https", "postgres", "encoded", "no-user"],
)
def test_url_passwords_are_scrubbed(text: str, scrubbed: str) -> None:
    record, _ = _record(detail=text, nested={"list": [text]})
    assert record["detail"] == scrubbed
    assert record["nested"] == {"list": [scrubbed]}


@pytest.mark.parametrize(
    "key",
    [
        "secret",
        "Secret",
        "client-secret",
        "client_secret",
        "clientSecret",
        "api_key",
        "apiKey",
        "x-api-key",
        "X-API-Key",
        "cookie",
        "Cookie",
        "set-cookie",
        "Set-Cookie",
        "proxy-authorization",
        "access_token",
        "refresh_token",
    ],
)
def test_secret_named_keys_are_redacted(key: str) -> None:
    record, raw = _record(headers={key: "s3cr3t-v4lue"}, nested=[{key: ["s3cr3t-v4lue"]}])
    assert "s3cr3t-v4lue" not in raw
    assert record["headers"] == {key: REDACTED}


def test_keys_naming_a_secret_are_left_alone() -> None:
    """A Secret's name and references hold no secret material; an object under a
    "secret" key (a pod's secret volume) is walked, not dropped."""
    volume = {"name": "ssh", "secret": {"secretName": "pi-ssh", "defaultMode": 384}}
    fields = {
        "secretName": "pi-ssh",
        "secret_ref": {"name": "creds"},
        "imagePullSecrets": [{"name": "registry"}],
        "volumes": [volume],
        "secret": None,
    }
    record, _ = _record(**fields)
    assert {k: record[k] for k in fields} == fields


def test_ordinary_text_is_left_alone() -> None:
    text = (
        "public key ssh-ed25519 AAAAC3Nza; the bearer of bad news; -----; basic "
        "information; Basic auth; Basic abc; eyJob name.eyJ; ssh://git@github.com/x; "
        "https://host/p?at=a:b@c; mailto:ops@example.com; host:port@v2"
    )
    record, _ = _record(detail=text, event_count=3, ratio=0.5, flag=True, nothing=None)
    assert record["detail"] == text
    assert (record["event_count"], record["ratio"], record["flag"], record["nothing"]) == (
        3,
        0.5,
        True,
        None,
    )


def _fail_with_key_in_scope() -> None:
    private_key = _PEM  # noqa: F841 - a local the traceback must not show
    headers = {"Authorization": f"Bearer {_PLAIN_SECRET}"}  # noqa: F841
    plain = _PLAIN_SECRET  # noqa: F841
    raise ValueError(f"cannot create Secret with data {_B64} from {_PEM!r}")


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_tracebacks_have_no_locals_and_no_key_material(fmt: str) -> None:
    out = io.StringIO()
    configure_logging(fmt, "info", stream=out)
    try:
        _fail_with_key_in_scope()
    except ValueError:
        structlog.get_logger().exception("sync failed", mpijob="ns/pi")
    try:
        _fail_with_key_in_scope()
    except ValueError:
        logging.getLogger("aiohttp.server").exception("stdlib too")
    text = out.getvalue()
    assert "_fail_with_key_in_scope" in text  # the traceback is there
    assert "cannot create Secret with data" in text  # and its message
    for secret in (_PLAIN_SECRET, _KEY_BODY, _B64[:40], "PRIVATE KEY"):
        assert secret not in text, fmt
    if fmt == "json":
        for line in _lines(out):
            frames = json.loads(line)["exception"][0]["frames"]
            assert frames and all("locals" not in f for f in frames)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "expected"),
    [(_Terminal(), "console"), (io.StringIO(), "json")],
    ids=["terminal", "pipe"],
)
def test_auto_format_is_console_on_a_terminal_and_json_otherwise(
    stream: io.StringIO, expected: str
) -> None:
    configure_logging("auto", "info", stream=stream)
    structlog.get_logger().info("hello", mpijob="team/pi")
    line = stream.getvalue().strip()
    if expected == "json":
        assert json.loads(line)["mpijob"] == "team/pi"
    else:
        assert "hello" in line and "team/pi" in line
        with pytest.raises(ValueError):
            json.loads(line)
