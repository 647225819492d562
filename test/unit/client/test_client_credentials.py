"""When credentials are fetched again: ahead of expiry, after a 401, never twice at once.

A scripted token source on a fake clock; the real sources (an exec plugin handing
out ServiceAccount tokens, a rotated token file) are exercised against a real API
server in test/integration/client/test_client_credentials_live.py and
test/chaos/test_chaos_credentials.py.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
from pathlib import Path

import orjson
import pytest
import structlog
from kubernetes_asyncio.config.kube_config import ConfigNode

from mpi_operator.client import credentials
from mpi_operator.client.clock import FakeClock
from mpi_operator.client.credentials import (
    Credentials,
    CredentialsError,
    ExecSource,
    StaticSource,
    Token,
    jwt_expiry,
)
from mpi_operator.controller.core.failures import describe
from mpi_operator.server.logging import scrub_text

API_VERSION = "client.authentication.k8s.io/v1"


class Script:
    kind = "exec"
    reloadable = True
    reread_period: float | None = None

    def __init__(self, clock: FakeClock, lifetime: float | None, delay: float = 0.0) -> None:
        self.clock = clock
        self.lifetime = lifetime
        self.delay = delay
        self.calls: list[bool] = []
        self.fail = False

    async def fetch(self, *, forced: bool) -> Token:
        self.calls.append(forced)
        if self.delay:
            await self.clock.sleep(self.delay)
        if self.fail:
            raise RuntimeError("plugin exited 1")
        expiry = None
        if self.lifetime is not None:
            expiry = self.clock.now() + datetime.timedelta(seconds=self.lifetime)
        return Token(f"Bearer t{len(self.calls)}", expiry)


async def test_a_token_is_replaced_in_the_background_before_it_expires() -> None:
    clock = FakeClock()
    source = Script(clock, lifetime=100.0, delay=1.0)
    creds = Credentials(source, clock=clock)
    first = asyncio.create_task(creds.authorization())
    await clock.settle()
    clock.step(1.0)
    assert await first == "Bearer t1"
    clock.step(79.0)  # 79 s of its 100: not yet due (due at 80 s, a fifth ahead)
    assert await creds.authorization() == "Bearer t1"
    assert source.calls == [False]
    clock.step(1.5)
    assert await creds.authorization() == "Bearer t1", "no request waits for the plugin"
    await clock.settle()
    assert source.calls == [False, False]
    clock.step(1.0)
    await clock.settle()
    assert await creds.authorization() == "Bearer t2"


async def test_long_lived_tokens_are_refreshed_five_minutes_ahead() -> None:
    clock = FakeClock()
    source = Script(clock, lifetime=3600.0)
    creds = Credentials(source, clock=clock)
    await creds.authorization()
    clock.step(3600 - 301)
    await creds.authorization()
    await clock.settle()
    assert len(source.calls) == 1
    clock.step(2)
    await creds.authorization()
    await clock.settle()
    assert len(source.calls) == 2


async def test_an_expired_token_is_waited_for_by_every_request_once() -> None:
    clock = FakeClock()
    source = Script(clock, lifetime=10.0, delay=1.0)
    creds = Credentials(source, Token("Bearer t0", clock.now()), clock=clock)
    waiting = [asyncio.create_task(creds.authorization()) for _ in range(5)]
    await clock.settle()
    clock.step(1.0)
    assert await asyncio.gather(*waiting) == ["Bearer t1"] * 5
    assert source.calls == [False]


async def test_a_401_reloads_once_for_all_requests_that_used_the_rejected_token() -> None:
    clock = FakeClock()
    source = Script(clock, lifetime=None)
    creds = Credentials(source, clock=clock)
    used = await creds.authorization()
    results = await asyncio.gather(*(creds.reload(used) for _ in range(3)))
    assert results == [True, True, True]
    assert source.calls == [False, True]
    assert await creds.reload("Bearer t1") is True, "already replaced: just retry"
    assert source.calls == [False, True]


async def test_no_retry_when_the_source_cannot_give_another_token() -> None:
    static = Credentials(StaticSource("Bearer fixed"), clock=FakeClock())
    assert await static.reload(await static.authorization()) is False
    clock = FakeClock()
    source = Script(clock, lifetime=None)
    creds = Credentials(source, clock=clock)
    used = await creds.authorization()
    source.fail = True
    assert await creds.reload(used) is False


class Hung:
    """An exec plugin that never answers."""

    kind = "exec"
    reloadable = True
    reread_period: float | None = None

    async def fetch(self, *, forced: bool) -> Token:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_a_plugin_that_never_answers_fails_the_request_in_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(credentials, "FETCH_TIMEOUT", 0.05)
    creds = Credentials(Hung(), clock=FakeClock())
    with pytest.raises(CredentialsError, match="cannot obtain exec credentials: no answer"):
        async with asyncio.timeout(5):
            await creds.authorization()


async def test_without_a_token_a_failing_plugin_is_not_run_again_at_once() -> None:
    clock = FakeClock()
    source = Script(clock, lifetime=None)
    source.fail = True
    creds = Credentials(source, clock=clock)
    for _ in range(3):
        with pytest.raises(CredentialsError, match="cannot obtain exec credentials") as caught:
            await creds.authorization()
        assert caught.value.detail == "plugin exited 1"
    assert len(source.calls) == 1, "the requests of the next 5 s get the same error"
    clock.step(5)
    source.fail = False
    assert await creds.authorization() == "Bearer t2"


async def test_a_failed_background_refresh_keeps_the_token_and_tries_again_later() -> None:
    clock = FakeClock()
    source = Script(clock, lifetime=100.0)
    creds = Credentials(source, clock=clock)
    await creds.authorization()
    source.fail = True
    clock.step(81)
    assert await creds.authorization() == "Bearer t1"
    await clock.settle()
    assert await creds.authorization() == "Bearer t1"
    await clock.settle()
    assert len(source.calls) == 2, "not hammered"
    clock.step(5)
    await creds.authorization()
    await clock.settle()
    assert len(source.calls) == 3
    clock.step(20)  # lapsed: the request itself fails, naming the source
    with pytest.raises(CredentialsError, match="cannot obtain exec credentials"):
        await creds.authorization()


def _jwt(claims: dict[str, object]) -> str:
    body = base64.urlsafe_b64encode(orjson.dumps(claims)).rstrip(b"=").decode()
    return f"e30.{body}.sig"


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        (
            _jwt({"exp": 1700000000}),
            datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.UTC),
        ),
        (_jwt({"sub": "x"}), None),
        ("opaque-token", None),
        ("a.!!!.c", None),
    ],
)
def test_jwt_expiry(token: str, expected: datetime.datetime | None) -> None:
    assert jwt_expiry(token) == expected


# What an exec plugin might print on stderr when it fails: a token and an account.
_STDERR = (
    "refresh failed for arn:aws:iam::123456789012:role/ops, cached token eyJhbGciOi.eyJzdWIi.c2ln"
)


async def test_an_exec_plugins_stderr_is_logged_but_kept_out_of_the_error(
    tmp_path: Path,
) -> None:
    """The error of a failed fetch becomes a failed sync's SyncFailed event, in the
    tenant's namespace: it says which credentials failed, and nothing the plugin said;
    that goes to the operator's log (scrubbed there)."""
    plugin = tmp_path / "plugin.sh"
    plugin.write_text(f"#!/bin/sh\necho '{_STDERR}' >&2\nexit 1\n")
    plugin.chmod(0o755)
    config = ConfigNode("exec", {"command": str(plugin), "apiVersion": API_VERSION})
    creds = Credentials(ExecSource(config), clock=FakeClock())
    with structlog.testing.capture_logs() as logs, pytest.raises(CredentialsError) as caught:
        await creds.authorization()
    err = caught.value
    assert str(err) == (
        "0 CredentialsUnavailable: cannot obtain exec credentials: "
        "the cause is in the operator's log"
    )
    assert "123456789012" not in describe(err) and "eyJ" not in describe(err)
    assert err.detail == f"plugin exited 1: {_STDERR}"
    (line,) = [e for e in logs if e["event"] == "obtaining credentials failed"]
    assert line["cause"] == err.detail
    assert "eyJzdWIi" not in scrub_text(line["cause"])  # what the log's renderer writes
