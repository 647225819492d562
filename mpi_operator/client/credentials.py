"""Bearer credentials that stay valid for the life of the process.

A :class:`Credentials` holds the ``Authorization`` header the transport sends
and one :class:`TokenSource` that can produce it again:

* :class:`ExecSource`: a kubeconfig ``exec`` plugin (EKS, GKE, AKS, ...), run
  as an asyncio subprocess (:mod:`.exec_plugin`, killed when it does not answer); its
  ExecCredential's ``expirationTimestamp`` says when the token lapses.
* :class:`OidcSource`: a kubeconfig ``oidc`` auth-provider, refreshed through
  kubernetes_asyncio's loader (the id-token's ``exp`` claim is its expiry).
* :class:`FileSource`: a token file (the in-cluster projected ServiceAccount
  token, or a kubeconfig ``tokenFile``); the kubelet rotates it, so it is re-read
  every minute, as client-go's cached file token source does.
* :class:`StaticSource`: a token fixed in the kubeconfig (nothing to reload).

Timing: a token with an expiry is replaced in the background once most of its
life is spent (``min(5 min, a fifth of its lifetime)`` before it lapses), while
requests keep using the current one; only a missing or lapsed token makes a
request wait for the source. Deviation: client-go's exec authenticator runs the
plugin only once the token has expired; refreshing ahead keeps a slow plugin
off the request path (the Lease renewal included).

On a 401 the transport calls :meth:`Credentials.reload` with the header it
sent: the source is asked again (forced) unless another request already did,
and the request is retried once when the header changed (kopf's
re-authentication is the model). Header values are never logged.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson
import structlog

from mpi_operator.client.clock import Clock, RealClock
from mpi_operator.client.errors import ApiError
from mpi_operator.client.exec_plugin import run_exec_plugin
from mpi_operator.client.lean_imports import ExecProvider, parse_rfc3339

log = structlog.get_logger()

# kubernetes_asyncio's EXPIRY_SKEW_PREVENTION_DELAY: refresh at most this long ahead.
REFRESH_AHEAD = 300.0
# client-go's cachingTokenSource period for token files.
FILE_REREAD_PERIOD = 60.0
# After a failed background refresh, the current token is kept and tried again this late;
# without a valid token, requests fail at once with the last error for as long.
RETRY_AFTER_FAILURE = 5.0
# Deviation: client-go waits on an exec plugin without a limit; a hung one would stall
# every request (the Lease renewal included).
FETCH_TIMEOUT = 30.0


@dataclass(frozen=True)
class Token:
    """What a source hands out: the header value and, if known, when it lapses."""

    header: str | None
    expiry: datetime.datetime | None = None


class TokenSource(Protocol):
    kind: str
    """Named in logs: exec, oidc, file, static."""
    reloadable: bool
    """Whether asking again can give a different token (a 401 is worth a retry)."""
    reread_period: float | None
    """Re-read this often even without an expiry (token files)."""

    async def fetch(self, *, forced: bool) -> Token: ...


class CredentialsError(ApiError):
    """The source could not produce a credential (status 0: no request was sent).

    Its message names only the kind of credentials (and a timeout): a failed sync's
    error becomes a ``SyncFailed`` event in the MPIJob's namespace, which tenants
    read, and what the source said (an exec plugin's stderr may echo tokens, paths
    and the cloud account) is the operator's business. That cause is kept in
    :attr:`detail` and logged, scrubbed, when the fetch fails."""

    def __init__(self, kind: str, err: BaseException, *, public: bool = False) -> None:
        self.detail = str(err) or repr(err)
        cause = self.detail if public else "the cause is in the operator's log"
        message = f"cannot obtain {kind} credentials: {cause}"
        super().__init__(0, {"reason": "CredentialsUnavailable", "message": message})


class StaticSource:
    kind = "static"
    reloadable = False
    reread_period: float | None = None

    def __init__(self, header: str | None) -> None:
        self._header = header

    async def fetch(self, *, forced: bool) -> Token:
        return Token(self._header)


class FileSource:
    """A bearer token file, re-read every minute and after a 401."""

    kind = "file"
    reloadable = True
    reread_period: float | None = FILE_REREAD_PERIOD

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    async def fetch(self, *, forced: bool) -> Token:
        text = await asyncio.to_thread(self.path.read_text)
        token = text.strip()
        if not token:
            raise ValueError(f"token file {self.path} is empty")
        return Token(f"Bearer {token}")


class ExecSource:
    """A kubeconfig ``exec`` credential plugin (token output; see the module docstring)."""

    kind = "exec"
    reloadable = True
    reread_period: float | None = None

    def __init__(self, exec_config: Any) -> None:
        self.exec_config = exec_config

    async def fetch(self, *, forced: bool) -> Token:
        status = await run_exec_plugin(ExecProvider(self.exec_config), FETCH_TIMEOUT)
        if "token" not in status:
            raise ValueError(
                "exec plugin output has no token (client certificates are not reloaded)"
            )
        expiry = status.get("expirationTimestamp")
        return Token(f"Bearer {status['token']}", parse_rfc3339(expiry) if expiry else None)


class OidcSource:
    """A kubeconfig ``oidc`` auth-provider, through kubernetes_asyncio's loader."""

    kind = "oidc"
    reloadable = True
    reread_period: float | None = None

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    async def fetch(self, *, forced: bool) -> Token:
        if forced:
            await self.loader._refresh_oidc(self.loader._user["auth-provider"])
        header = str(await self.loader._load_oid_token())  # refreshes when it lapses soon
        return Token(header, jwt_expiry(header.removeprefix("Bearer ")))


def jwt_expiry(token: str) -> datetime.datetime | None:
    """The ``exp`` claim of a JWT, if it has one."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = orjson.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        exp = claims.get("exp") if isinstance(claims, dict) else None
    except ValueError:
        return None
    if not isinstance(exp, int | float):
        return None
    return datetime.datetime.fromtimestamp(exp, datetime.UTC)


class Credentials:
    """The current header of one source, refreshed ahead of expiry; see the module docstring."""

    def __init__(
        self, source: TokenSource, initial: Token | None = None, clock: Clock | None = None
    ) -> None:
        self.source = source
        self.clock: Clock = clock or RealClock()
        self._header: str | None = None
        self._loaded = False
        self._expires_at: float | None = None  # monotonic
        self._refresh_at: float | None = None  # monotonic
        self._inflight: asyncio.Task[None] | None = None
        self._failed: tuple[float, CredentialsError] | None = None  # (monotonic, error)
        self.refreshes = 0
        if initial is not None:
            self._set(initial)

    @property
    def header(self) -> str | None:
        return self._header

    def _set(self, token: Token) -> None:
        now = self.clock.monotonic()
        self._header = token.header
        self._loaded = True
        self._expires_at = self._refresh_at = None
        if token.expiry is not None:
            life = (token.expiry - self.clock.now()).total_seconds()
            self._expires_at = now + life
            self._refresh_at = now + life - min(REFRESH_AHEAD, max(life, 0.0) / 5)
        elif self.source.reread_period is not None:
            self._refresh_at = now + self.source.reread_period

    async def _fetch(self, forced: bool) -> None:
        try:
            async with asyncio.timeout(FETCH_TIMEOUT):
                token = await self.source.fetch(forced=forced)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            late = TimeoutError(f"no answer within {FETCH_TIMEOUT:g}s")
            self._failed = (
                self.clock.monotonic(),
                CredentialsError(self.source.kind, late, public=True),
            )
            raise self._failed[1] from None
        except Exception as err:
            failed = CredentialsError(self.source.kind, err)
            # The cause only here (the log scrubs tokens out of it), never in the error.
            log.warning(
                "obtaining credentials failed", source=self.source.kind, cause=failed.detail
            )
            self._failed = (self.clock.monotonic(), failed)
            raise failed from None
        self._failed = None
        self._set(token)
        self.refreshes += 1
        log.info("credentials refreshed", source=self.source.kind, forced=forced)

    async def _refresh(self, forced: bool) -> None:
        """One fetch at a time: concurrent callers wait for the one in flight."""
        if self._inflight is None or self._inflight.done():
            self._inflight = asyncio.create_task(self._fetch(forced), name="credentials-refresh")
        await asyncio.shield(self._inflight)

    def _background_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        log.warning(
            "refreshing credentials failed; keeping the current ones",
            source=self.source.kind,
            error=str(task.exception()),
        )
        self._refresh_at = self.clock.monotonic() + RETRY_AFTER_FAILURE

    async def authorization(self) -> str | None:
        """The header value to send now (refreshing first if there is none valid)."""
        now = self.clock.monotonic()
        if not self._loaded or (self._expires_at is not None and now >= self._expires_at):
            failed = self._failed
            if failed is not None and now - failed[0] < RETRY_AFTER_FAILURE:
                # Not the source again at once: it just failed (no traceback kept).
                raise failed[1].with_traceback(None)
            await self._refresh(forced=False)
        elif (
            self._refresh_at is not None
            and now >= self._refresh_at
            and (self._inflight is None or self._inflight.done())
        ):
            self._inflight = asyncio.create_task(self._fetch(False), name="credentials-refresh")
            self._inflight.add_done_callback(self._background_done)
        return self._header

    async def reload(self, rejected: str | None) -> bool:
        """After a 401 to a request sent with ``rejected``: True when another credential
        is now there (the request is worth one more try)."""
        if self._header != rejected:
            return True  # someone reloaded since that request was sent
        if not self.source.reloadable:
            return False
        try:
            await self._refresh(forced=True)
        except CredentialsError as err:
            log.warning(
                "reloading credentials after 401 failed", source=self.source.kind, error=str(err)
            )
            return False
        return self._header != rejected

    async def close(self) -> None:
        task, self._inflight = self._inflight, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
