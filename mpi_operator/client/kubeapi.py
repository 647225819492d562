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

:class:`Resource` names any API resource by group/version/plural, so core
objects, batch Jobs and CRDs (kubeflow.org/v2beta1 mpijobs) go through the
same code.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import aiohttp
import structlog
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config import load_incluster_config, load_kube_config

from mpi_operator.client.clock import Clock, RealClock
from mpi_operator.client.ratelimit import TokenBucket

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

# Exceptions the reflector and other loops treat as transient network trouble.
NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    aiohttp.ClientError,
    OSError,
    asyncio.TimeoutError,
)


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base

    def __str__(self) -> str:
        return f"{self.plural}.{self.version}.{self.group or 'core'}"


PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
EVENTS = Resource("", "v1", "events", "Event")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
JOBS = Resource("batch", "v1", "jobs", "Job")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
POD_GROUPS_VOLCANO = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
POD_GROUPS_SCHEDULER_PLUGINS = Resource(
    "scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup"
)
PRIORITY_CLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
MPIJOBS = Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob")


class ApiError(Exception):
    """A non-2xx answer from the API server (``status`` 0: no answer at all)."""

    def __init__(self, status: int, body: Any = None, reason: str = "") -> None:
        self.status = status
        self.body: dict[str, Any] = body if isinstance(body, dict) else {}
        self.reason = str(self.body.get("reason") or reason)
        self.message = str(self.body.get("message") or body or reason)
        super().__init__(f"{status} {self.reason}: {self.message}")


# Anything a request can fail with: an answer from the server or no answer.
REQUEST_ERRORS: tuple[type[BaseException], ...] = (ApiError, *NETWORK_ERRORS)


def is_not_found(err: BaseException) -> bool:
    return isinstance(err, ApiError) and err.status == 404


def is_conflict(err: BaseException) -> bool:
    return isinstance(err, ApiError) and err.status == 409 and err.reason != "AlreadyExists"


def is_already_exists(err: BaseException) -> bool:
    return isinstance(err, ApiError) and err.status == 409 and err.reason == "AlreadyExists"


def is_gone(err: BaseException) -> bool:
    """410 / 'Expired': the resourceVersion we asked for was compacted away."""
    if not isinstance(err, ApiError):
        return False
    return (
        err.status == 410
        or err.reason in ("Expired", "Gone")
        or "too old resource version" in err.message
    )


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
        await self.api_client.close()

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
        resp: aiohttp.ClientResponse = await self.api_client.rest_client.request(
            method,
            url,
            query_params=cast(Any, queries) or None,
            headers=headers,
            body=body,
            _preload_content=False,
            _request_timeout=client_timeout,
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
                parsed = json.loads(data) if data else None
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
                    parsed: Any = json.loads(data)
                except ValueError:
                    parsed = data.decode("utf-8", "replace")
                raise ApiError(resp.status, parsed, resp.reason or "")
            yield resp
        finally:
            resp.release()
            resp.close()

    # -- typed-free verbs ----------------------------------------------------
    @staticmethod
    def _selectors(
        label_selector: str | None, field_selector: str | None
    ) -> list[tuple[str, str]]:
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


def _decode_line(line: bytes) -> dict[str, Any] | bytes:
    try:
        event = json.loads(line)
    except ValueError:
        return line
    return event if isinstance(event, dict) else line
