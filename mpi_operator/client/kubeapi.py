"""A thin, rate-limited, dict-based REST client over kubernetes_asyncio.

kubernetes_asyncio supplies configuration (kubeconfig, in-cluster service
account, exec/refresh token hooks), TLS and the aiohttp session; we bypass
its generated models and talk to the REST paths directly, returning plain
dicts. Model deserialisation is the dominant CPU cost of a large informer
and the controller only needs a handful of fields, so dicts it is.

Every request - including the initiation of a watch - first takes a token
from a client-wide :class:`~mpi_operator.client.ratelimit.TokenBucket`, as
client-go's ``rest.Config{QPS, Burst}`` does; ``qps == 0`` means client-go's
default (5 qps, burst 10) and ``qps < 0`` disables throttling. HTTP 429
responses are retried after ``Retry-After`` like client-go's request retry.

Resources are named by :class:`~mpi_operator.client.resources.Resource`;
errors are in :mod:`mpi_operator.client.errors`. Both are re-exported here.
"""

from __future__ import annotations

import os
import urllib.parse
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import structlog
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config import load_incluster_config, load_kube_config

from mpi_operator.client.clock import Clock, RealClock
from mpi_operator.client.errors import (
    NETWORK_ERRORS,
    REQUEST_ERRORS,
    ApiError,
    is_already_exists,
    is_conflict,
    is_gone,
    is_not_found,
)
from mpi_operator.client.ratelimit import TokenBucket
from mpi_operator.client.resources import (
    CONFIGMAPS,
    EVENTS,
    JOBS,
    LEASES,
    MPIJOBS,
    NAMESPACES,
    POD_GROUPS_SCHEDULER_PLUGINS,
    POD_GROUPS_VOLCANO,
    PODS,
    PRIORITY_CLASSES,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
    Resource,
)

__all__ = [
    "CONFIGMAPS",
    "EVENTS",
    "JOBS",
    "LEASES",
    "MPIJOBS",
    "NAMESPACES",
    "NETWORK_ERRORS",
    "PODS",
    "POD_GROUPS_SCHEDULER_PLUGINS",
    "POD_GROUPS_VOLCANO",
    "PRIORITY_CLASSES",
    "REQUEST_ERRORS",
    "ROLES",
    "ROLE_BINDINGS",
    "SECRETS",
    "SERVICES",
    "SERVICE_ACCOUNTS",
    "ApiError",
    "KubeClient",
    "Resource",
    "is_already_exists",
    "is_conflict",
    "is_gone",
    "is_not_found",
]

log = structlog.get_logger()

DEFAULT_QPS = 5.0
DEFAULT_BURST = 10
_MAX_429_RETRIES = 10

PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}


def _effective_rate(qps: float, burst: int) -> tuple[float, int]:
    if qps == 0:
        return DEFAULT_QPS, burst or DEFAULT_BURST
    return qps, burst


class KubeClient:
    def __init__(
        self,
        api_client: ApiClient,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        clock: Clock | None = None,
        user_agent: str = "mpi-operator",
    ) -> None:
        self.api_client = api_client
        self.configuration: Configuration = api_client.configuration
        self.clock = clock or RealClock()
        qps, burst = _effective_rate(qps, burst)
        self.rate_limiter: TokenBucket | None = (
            TokenBucket(qps, max(burst, 1), self.clock) if qps > 0 else None
        )
        self.user_agent = user_agent
        self._session: aiohttp.ClientSession | None = None
        self._proxy: str | None = None

    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        context: str | None = None,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        clock: Clock | None = None,
    ) -> KubeClient:
        config = Configuration()
        await load_kube_config(
            config_file=str(path) if path is not None else None,
            context=context,
            client_configuration=config,
        )
        return cls(ApiClient(configuration=config), qps=qps, burst=burst, clock=clock)

    @classmethod
    async def from_environment(
        cls,
        kubeconfig: str | os.PathLike[str] | None = None,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        clock: Clock | None = None,
    ) -> KubeClient:
        """Explicit kubeconfig, else in-cluster, else $KUBECONFIG / ~/.kube/config."""
        if kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ:
            config = Configuration()
            load_incluster_config(client_configuration=config)  # type: ignore[no-untyped-call]
            return cls(ApiClient(configuration=config), qps=qps, burst=burst, clock=clock)
        if kubeconfig is None:
            env = os.environ.get("KUBECONFIG")
            kubeconfig = env.split(os.pathsep)[0] if env else Path.home() / ".kube" / "config"
        return await cls.from_kubeconfig(kubeconfig, qps=qps, burst=burst, clock=clock)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        await self.api_client.close()

    def _http(self) -> aiohttp.ClientSession:
        """Our session on kubernetes_asyncio's connector (its TLS set-up), made on first use.

        Deviation from kubernetes_asyncio's own session: trust_env is off (it reads
        ~/.netrc and the proxy variables in a thread on every request); a proxy from
        the environment is looked up once, as Go's ProxyFromEnvironment caches it.
        """
        if self._session is None:
            connector = self.api_client.rest_client.pool_manager.connector
            self._session = aiohttp.ClientSession(
                connector=connector,
                connector_owner=False,
                trust_env=False,
                read_bufsize=2**21,
            )
            host = str(self.configuration.host or "")
            self._proxy = self.configuration.proxy or _env_proxy(host)
        return self._session

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- raw requests --------------------------------------------------------
    async def _throttle(self) -> None:
        if self.rate_limiter is not None:
            await self.rate_limiter.wait()

    async def _send(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] | None,
        body: Any,
        content_type: str,
        client_timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        await self._throttle()
        headers: dict[str, str] = {
            "Accept": "application/json",
            "Content-Type": content_type,
            "User-Agent": self.user_agent,
        }
        queries: list[tuple[str, str]] = list(query or [])
        await self.api_client.update_params_for_auth(headers, queries, ["BearerToken"])
        url = str(self.configuration.host or "").rstrip("/") + path
        data: bytes | None
        if body is None or isinstance(body, bytes):
            data = body
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = orjson.dumps(body)
        session = self._http()
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
        return resp

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        request_timeout: float = 60.0,
    ) -> Any:
        """Send one request; return the decoded JSON body or raise :class:`ApiError`."""
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
                data = await resp.read()
            finally:
                resp.release()
            if resp.status == 429 and attempt < _MAX_429_RETRIES:
                retry_after = resp.headers.get("Retry-After", "1")
                delay = float(retry_after) if retry_after.isdigit() else 1.0
                await self.clock.sleep(min(delay, 10.0))
                continue
            parsed: Any
            try:
                parsed = orjson.loads(data) if data else None
            except ValueError:
                parsed = data.decode("utf-8", "replace")
            if not 200 <= resp.status < 300:
                raise ApiError(resp.status, parsed, resp.reason or "")
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
        resp = await self._send("GET", path, query, None, "application/json", timeout)
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

    # -- typed-free verbs ----------------------------------------------------
    @staticmethod
    def _selectors(label_selector: str | None, field_selector: str | None) -> list[tuple[str, str]]:
        query: list[tuple[str, str]] = []
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        return query

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        request_timeout: float = 60.0,
    ) -> dict[str, Any]:
        query = self._selectors(label_selector, field_selector)
        if limit:
            query.append(("limit", str(limit)))
        if continue_:
            query.append(("continue", continue_))
        if resource_version is not None:
            query.append(("resourceVersion", resource_version))
        result: dict[str, Any] = await self.request(
            "GET", resource.path(namespace), query=query, request_timeout=request_timeout
        )
        return result

    async def get(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("GET", resource.path(namespace, name))
        return result

    async def create(
        self, resource: Resource, namespace: str | None, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "POST", resource.path(namespace), body=dict(body)
        )
        return result

    async def replace(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        body: Mapping[str, Any],
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "PUT", resource.path(namespace, name, subresource), body=dict(body)
        )
        return result

    async def replace_status(
        self, resource: Resource, namespace: str | None, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        return await self.replace(resource, namespace, name, body, subresource="status")

    async def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
    ) -> dict[str, Any]:
        query: list[tuple[str, str]] = []
        if field_manager:
            query.append(("fieldManager", field_manager))
        if force:
            query.append(("force", "true"))
        result: dict[str, Any] = await self.request(
            "PATCH",
            resource.path(namespace, name, subresource),
            query=query,
            body=patch,
            content_type=PATCH_CONTENT_TYPES[patch_type],
        )
        return result

    async def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        propagation_policy: str | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if preconditions:
            body["preconditions"] = dict(preconditions)
        result: dict[str, Any] = await self.request(
            "DELETE", resource.path(namespace, name), body=body
        )
        return result

    async def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
    ) -> AsyncGenerator[dict[str, Any] | bytes, None]:
        """Yield decoded watch events; a line that is not valid JSON is yielded
        as raw ``bytes`` so the caller can log it and carry on."""
        query = self._selectors(label_selector, field_selector)
        query += [("watch", "true"), ("timeoutSeconds", str(timeout_seconds))]
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if resource_version:
            query.append(("resourceVersion", resource_version))
        async with self.stream(
            resource.path(namespace), query=query, read_timeout=timeout_seconds + 60
        ) as resp:
            buf = b""
            async for chunk in resp.content.iter_any():
                buf += chunk
                while True:
                    nl = buf.find(b"\n")
                    if nl < 0:
                        break
                    line, buf = buf[:nl], buf[nl + 1 :]
                    if line.strip():
                        yield _decode_line(line)
            if buf.strip():
                yield _decode_line(buf)


def _env_proxy(host: str) -> str | None:
    """HTTPS_PROXY/NO_PROXY (and lower-case) for the API server, as Go reads them."""
    parsed = urllib.parse.urlsplit(host)
    if not parsed.hostname or urllib.request.proxy_bypass(parsed.hostname):
        return None
    return urllib.request.getproxies().get(parsed.scheme or "https")


def _decode_line(line: bytes) -> dict[str, Any] | bytes:
    try:
        event = orjson.loads(line)
    except ValueError:
        return line
    return event if isinstance(event, dict) else line
