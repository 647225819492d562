"""structlog configuration: JSON lines in production, console for humans, no secrets."""

from __future__ import annotations

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
    assert record["secret"] == "job-ssh"  # a Secret's name is not secret material
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
