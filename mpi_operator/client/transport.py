"""Authenticated, throttled HTTP to the API server: the transport under
:class:`~mpi_operator.client.kubeapi.KubeClient`.

kubernetes_asyncio supplies configuration (kubeconfig, in-cluster service
account), TLS and the aiohttp connector; requests go to the REST paths directly
and come back as plain dicts. The bearer token comes from
:class:`~mpi_operator.client.credentials.Credentials` (exec plugins and OIDC
refreshed before they expire, token files re-read); a 401 reloads them and the
request is sent once more. With a
:class:`~mpi_operator.client.fence.LeadershipFence`, writes wait or fail once
leadership is not fresh.

Every request - including the initiation of a watch - first takes a token
from its clientset's :class:`~mpi_operator.client.ratelimit.FairTokenBucket`
(:mod:`~mpi_operator.client.clientsets`: Kubernetes' own resources, MPIJobs, each gang
scheduler's PodGroups), whose budget is client-go's ``rest.Config{QPS, Burst}``;
``qps == 0`` means client-go's default (5 qps, burst 10) and ``qps < 0`` disables
throttling. Unlike client-go's
FIFO bucket, tokens go in turns to the request flows (one per MPIJob being synced,
one for everything else), so one job's backlog does not hold back the others. HTTP 429
responses are retried after ``Retry-After`` like client-go's request retry.

HTTP/1.1 takes a TLS connection per request in flight, and asyncio's own loop gives
each a 256 KiB read buffer, zero-filled, so resident: :func:`small_tls_read_buffers`
makes it 64 KiB (four TLS records) for the process. (The operator's process runs on
uvloop, whose buffer is allocated but not filled, so only what TLS reads is resident.)
The connection pool has no limit: each watch holds a connection while it runs, so a
limit shared with requests lets enough watched namespaces hold every request back.
Requests are bounded instead: at most :data:`REQUEST_CONNECTIONS` wait for their
response at once (a burst of pod creates waits for a slot, before the leadership fence
judges it), and freed slots go to the request flows in turns (:mod:`.fair_slots`).
client-go multiplexes both on one HTTP/2 connection instead.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import contextlib
import os
import ssl
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Self

import aiohttp
import orjson
import structlog

from mpi_operator.client.clientsets import ClientsetThrottles
from mpi_operator.client.clock import Clock, RealClock
from mpi_operator.client.credentials import Credentials
from mpi_operator.client.errors import ApiError
from mpi_operator.client.fair_slots import FairSlots
from mpi_operator.client.fence import LeadershipFence, fenced_timeout
from mpi_operator.client.kubeconfig import ClientConfig, load_client_config
from mpi_operator.client.lean_imports import Configuration
from mpi_operator.client.ratelimit import DISPATCH_TICK
from mpi_operator.client.tls import tls_context

log = structlog.get_logger()

DEFAULT_QPS = 5.0
DEFAULT_BURST = 10
_MAX_429_RETRIES = 10
#: Bytes read at a time from a body that is dropped (``discard_body``).
_DISCARD_CHUNK = 65536


#: The read buffer of each TLS connection (asyncio's default: 256 KiB).
TLS_READ_BUFFER = 64 * 1024
#: Requests (not watches) waiting for their response at once, so connections in use
#: for them: client-go keeps 25 idle per host over HTTP/1.1. At 100 QPS, 32 wait for
#: a slot only while the API server takes over 0.3 s a request.
REQUEST_CONNECTIONS = 32


def small_tls_read_buffers() -> None:
    """Each TLS connection of this process reads through a :data:`TLS_READ_BUFFER`
    buffer. ``SSLProtocol`` allocates its buffer of ``max_size`` bytes per connection
    and reads at most that much at a time; 64 KiB still holds four full TLS records."""
    protocol = getattr(asyncio.sslproto, "SSLProtocol", None)
    if protocol is not None and getattr(protocol, "max_size", 0) > TLS_READ_BUFFER:
        protocol.max_size = TLS_READ_BUFFER


def _effective_rate(qps: float, burst: int) -> tuple[float, int]:
    if qps == 0:
        return DEFAULT_QPS, burst or DEFAULT_BURST
    return qps, burst


class ApiTransport:
    """One API server connection: configuration, session, throttle, raw requests."""

    def __init__(
        self,
        configuration: Configuration,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        clock: Clock | None = None,
        user_agent: str = "mpi-operator",
        credentials: Credentials | None = None,
        fence: LeadershipFence | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        small_tls_read_buffers()
        #: The bearer token's keeper (None: the configuration's api_key, as it is).
        self.credentials = credentials
        #: Refuses writes once leadership is not fresh (None: no fence).
        self.fence = fence
        # Deviation: no kubernetes_asyncio ApiClient: its REST client would load the
        # system's CA store into a TLS context and open a session that nothing uses.
        self.configuration = configuration
        self.clock = clock or RealClock()
        qps, burst = _effective_rate(qps, burst)
        # Deviation from client-go's flowcontrol limiter: turns per request flow, not first
        # come, and tokens handed out in ticks while requests wait.
        self.throttles = ClientsetThrottles(qps, burst, self.clock, tick=DISPATCH_TICK)
        self.user_agent = user_agent
        #: None: built from the configuration's files on first use.
        self._tls = tls
        self._session: aiohttp.ClientSession | None = None
        self._closed = False
        self._proxy: str | None = None
        self._request_slots = FairSlots(REQUEST_CONNECTIONS)

    @classmethod
    def from_config(
        cls,
        config: ClientConfig,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        clock: Clock | None = None,
        user_agent: str = "mpi-operator",
    ) -> Self:
        """A transport on a loaded configuration; its credentials may be shared."""
        return cls(
            config.configuration,
            qps=qps,
            burst=burst,
            clock=clock,
            user_agent=user_agent,
            credentials=config.credentials,
            tls=config.tls,
        )

    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | os.PathLike[str],
        *,
        context: str | None = None,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        clock: Clock | None = None,
    ) -> Self:
        """A transport on the kubeconfig at ``path``, used as given (the process resolves
        its configuration with :func:`~mpi_operator.client.kubeconfig.load_client_config`)."""
        config = await load_client_config(path, context=context, environ={})
        return cls.from_config(config, qps=qps, burst=burst, clock=clock)

    async def close(self) -> None:
        if self.credentials is not None:
            await self.credentials.close()
        self._closed = True
        if self._session is not None:
            await self._session.close()

    def _http(self) -> aiohttp.ClientSession:
        """Our session, made on first use, on a connector with the configuration's TLS
        context (as kubernetes_asyncio's REST client builds it, unless the load built
        it) and no connection limit (see the module's docstring).

        Deviation from kubernetes_asyncio's own session: trust_env is off (it reads
        ~/.netrc and the proxy variables in a thread on every request); a proxy from
        the environment is looked up once, as Go's ProxyFromEnvironment caches it.
        """
        if self._closed:
            raise RuntimeError("the API transport is closed")
        if self._session is None:
            tls = self._tls or tls_context(self.configuration)
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ssl=tls),
                trust_env=False,
                read_bufsize=2**21,
            )
            host = str(self.configuration.host or "")
            self._proxy = self.configuration.proxy or _env_proxy(host)
        return self._session

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- raw requests --------------------------------------------------------
    async def _authorize(self, headers: dict[str, str]) -> str | None:
        if self.credentials is None:
            # The configuration's own api_key, as kubernetes_asyncio's ApiClient sends it.
            bearer = (await self.configuration.auth_settings()).get("BearerToken")
            if bearer:
                headers[bearer["key"]] = bearer["value"]
            return headers.get("authorization")
        header = await self.credentials.authorization()
        if header:
            headers["Authorization"] = header
        return header

    async def _send(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] | None,
        body: Any,
        content_type: str,
        client_timeout: aiohttp.ClientTimeout,
        watch: bool = False,
    ) -> aiohttp.ClientResponse:
        """One request (after the throttle and the fence); a 401 reloads the
        credentials and, if they changed, sends it once more."""
        resp, sent_with = await self._send_once(
            method, path, query, body, content_type, client_timeout, watch
        )
        if resp.status != 401 or self.credentials is None:
            return resp
        await resp.read()  # kept: a caller that gets this response reads it again
        resp.release()
        if not await self.credentials.reload(sent_with):
            return resp
        log.info(
            "credentials rejected (401); retrying with reloaded ones", method=method, path=path
        )
        resp, _ = await self._send_once(
            method, path, query, body, content_type, client_timeout, watch
        )
        return resp

    async def _send_once(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] | None,
        body: Any,
        content_type: str,
        client_timeout: aiohttp.ClientTimeout,
        watch: bool = False,
    ) -> tuple[aiohttp.ClientResponse, str | None]:
        await self.throttles.wait(path)
        headers: dict[str, str] = {
            "Accept": "application/json",
            "Content-Type": content_type,
            "User-Agent": self.user_agent,
        }
        queries: list[tuple[str, str]] = list(query or [])
        sent_with = await self._authorize(headers)
        url = str(self.configuration.host or "").rstrip("/") + path
        data: bytes | None
        if body is None or isinstance(body, bytes):
            data = body
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = orjson.dumps(body)
        session = self._http()
        async with contextlib.nullcontext() if watch else self._request_slots.slot():
            if self.fence is not None:
                # Last, so that a write that waited for the throttle or a slot is judged
                # when it leaves.
                await self.fence.admit(method, path)
                client_timeout = fenced_timeout(client_timeout, self.fence, method, path)
            resp: aiohttp.ClientResponse = await session.request(
                method,
                url,
                params=queries or None,
                headers=headers,
                data=data,
                timeout=client_timeout,
                proxy=self._proxy,
                server_hostname=self.configuration.tls_server_name,
            )
        return resp, sent_with

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        request_timeout: float = 60.0,
        discard_body: bool = False,
        decode: Callable[[bytes], Any] | None = None,
    ) -> Any:
        """Send one request; return the decoded JSON body or raise :class:`ApiError`.
        ``discard_body``: a successful answer's body is read in chunks and dropped, and
        None returned (a delete of a collection answers with every object it deleted).
        ``decode``: decodes a successful answer instead of orjson (raising ValueError
        when it cannot)."""
        client_timeout = aiohttp.ClientTimeout(total=request_timeout)
        for attempt in range(_MAX_429_RETRIES + 1):
            try:
                resp = await self._send(method, path, query, body, content_type, client_timeout)
            except aiohttp.ClientConnectorError:
                raise
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as err:
                # As Go's transport: a request that failed on a pooled connection the server
                # had closed (e.g. it restarted) is sent once more, on a new connection.
                log.debug("connection lost, sending again", method=method, error=str(err))
                resp = await self._send(method, path, query, body, content_type, client_timeout)
            try:
                if discard_body and 200 <= resp.status < 300:
                    async for _ in resp.content.iter_chunked(_DISCARD_CHUNK):
                        pass
                    return None
                data = await resp.read()
            finally:
                resp.release()
            if resp.status == 429 and attempt < _MAX_429_RETRIES:
                retry_after = resp.headers.get("Retry-After", "1")
                delay = float(retry_after) if retry_after.isdigit() else 1.0
                await self.clock.sleep(min(delay, 10.0))
                continue
            parsed: Any
            ok = 200 <= resp.status < 300
            loads = decode if decode is not None and ok else orjson.loads
            try:
                parsed = loads(data) if data else None
            except ValueError:
                parsed = data.decode("utf-8", "replace")
            if not ok:
                raise ApiError(resp.status, parsed, resp.reason or "")
            if data and not isinstance(parsed, dict):
                # A proxy's HTML page, say: no answer of the API server. As client-go's
                # decode error, the caller retries; 502 marks it a bad gateway's.
                raise ApiError(502, None, f"the answer to {method} {path} is not a JSON object")
            return parsed
        raise AssertionError("unreachable")

    @asynccontextmanager
    async def stream(
        self,
        path: str,
        *,
        query: Sequence[tuple[str, str]] | None = None,
        read_timeout: float | None = None,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """Open a long-lived GET (a watch); raises :class:`ApiError` on non-2xx."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=read_timeout)
        resp = await self._send("GET", path, query, None, "application/json", timeout, watch=True)
        try:
            if not 200 <= resp.status < 300:
                data = await resp.read()
                try:
                    parsed: Any = orjson.loads(data)
                except ValueError:
                    parsed = data.decode("utf-8", "replace")
                raise ApiError(resp.status, parsed, resp.reason or "")
            yield resp
        finally:
            resp.release()
            resp.close()


def _env_proxy(host: str) -> str | None:
    """HTTPS_PROXY/NO_PROXY (and lower-case) for the API server, as Go reads them."""
    parsed = urllib.parse.urlsplit(host)
    if not parsed.hostname or urllib.request.proxy_bypass(parsed.hostname):
        return None
    return urllib.request.getproxies().get(parsed.scheme or "https")
