"""A thin, dict-based REST client: the verbs (list, get, create, replace, patch,
delete, watch) on :class:`~mpi_operator.client.resources.Resource` paths, over
:class:`~mpi_operator.client.transport.ApiTransport` (authentication, client-side
rate limit, 429 retry).

Model deserialisation is the dominant CPU cost of a large informer and the
controller only needs a handful of fields, so requests return plain dicts rather
than kubernetes_asyncio's generated models.

Resources are named by :class:`~mpi_operator.client.resources.Resource`;
errors are in :mod:`mpi_operator.client.errors`. Both are re-exported here.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any

import orjson

from mpi_operator.client.decoding import decode_list
from mpi_operator.client.errors import (
    NETWORK_ERRORS,
    REQUEST_ERRORS,
    ApiError,
    is_already_exists,
    is_conflict,
    is_gone,
    is_not_found,
)
from mpi_operator.client.resources import (
    CONFIGMAPS,
    EVENTS,
    JOBS,
    LEASES,
    MPIJOBS,
    NAMESPACES,
    POD_GROUPS_SCHEDULER_PLUGINS,
    POD_GROUPS_VOLCANO,
    POD_GROUPS_WORKLOAD_API,
    PODS,
    PRIORITY_CLASSES,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
    Resource,
)
from mpi_operator.client.transport import DEFAULT_BURST, DEFAULT_QPS, ApiTransport
from mpi_operator.client.watch_pacing import paced_chunks

__all__ = [
    "CONFIGMAPS",
    "DEFAULT_BURST",
    "DEFAULT_QPS",
    "EVENTS",
    "JOBS",
    "LEASES",
    "MPIJOBS",
    "NAMESPACES",
    "NETWORK_ERRORS",
    "PODS",
    "POD_GROUPS_SCHEDULER_PLUGINS",
    "POD_GROUPS_VOLCANO",
    "POD_GROUPS_WORKLOAD_API",
    "PRIORITY_CLASSES",
    "REQUEST_ERRORS",
    "ROLES",
    "ROLE_BINDINGS",
    "SECRETS",
    "SERVICES",
    "SERVICE_ACCOUNTS",
    "ApiError",
    "ApiTransport",
    "KubeClient",
    "Resource",
    "is_already_exists",
    "is_conflict",
    "is_gone",
    "is_not_found",
]

PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}


class KubeClient(ApiTransport):
    """The verbs on resources; see the module docstring."""

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
        undecodable_items: bool = False,
    ) -> dict[str, Any]:
        """One page of a list. ``undecodable_items``: a page orjson refuses is decoded
        item by item, an item it refuses alone coming back as a
        :class:`~mpi_operator.client.decoding.Undecodable` (else the whole page fails
        with a 502 :class:`ApiError`)."""
        query = self._selectors(label_selector, field_selector)
        if limit:
            query.append(("limit", str(limit)))
        if continue_:
            query.append(("continue", continue_))
        if resource_version is not None:
            query.append(("resourceVersion", resource_version))
        result: dict[str, Any] = await self.request(
            "GET",
            resource.path(namespace),
            query=query,
            request_timeout=request_timeout,
            decode=decode_list if undecodable_items else None,
        )
        return result

    async def get(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("GET", resource.path(namespace, name))
        return result

    async def create(
        self,
        resource: Resource,
        namespace: str | None,
        body: Mapping[str, Any],
        *,
        discard_answer: bool = False,
    ) -> dict[str, Any]:
        """Creates ``body``; returns the object as created. ``discard_answer``: the
        answer is dropped unread and ``{}`` returned (a caller that needs nothing of it
        saves decoding a whole object)."""
        result: dict[str, Any] | None = await self.request(
            "POST", resource.path(namespace), body=dict(body), discard_body=discard_answer
        )
        return result if result is not None else {}

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

    async def delete_collection(
        self,
        resource: Resource,
        namespace: str,
        *,
        label_selector: str,
        field_selector: str | None = None,
        request_timeout: float = 120.0,
    ) -> None:
        """Deletes every object of ``resource`` in ``namespace`` that the selectors
        match, in one request (the answer, a list of them all, is dropped unread)."""
        await self.request(
            "DELETE",
            resource.path(namespace),
            query=self._selectors(label_selector, field_selector),
            body={"apiVersion": "v1", "kind": "DeleteOptions"},
            request_timeout=request_timeout,
            discard_body=True,
        )

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
        batch_window: float = 0.0,
    ) -> AsyncGenerator[dict[str, Any] | bytes, None]:
        """Yield decoded watch events; a line that is not valid JSON is yielded
        as raw ``bytes`` so the caller can log it and carry on. With a
        ``batch_window``, a busy stream is read in batches (:mod:`watch_pacing`)."""
        query = self._selectors(label_selector, field_selector)
        query += [("watch", "true"), ("timeoutSeconds", str(timeout_seconds))]
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if resource_version:
            query.append(("resourceVersion", resource_version))
        async with self.stream(
            resource.path(namespace), query=query, read_timeout=timeout_seconds + 60
        ) as resp:
            lines = LineSplitter()
            connection = resp.connection
            reading = connection.transport if connection is not None else None
            async for chunk in paced_chunks(resp.content, reading, batch_window):
                for line in lines.feed(chunk):
                    yield _decode_line(line)
            for line in lines.end():
                yield _decode_line(line)


class LineSplitter:
    """Newline-delimited records from chunks cut anywhere. A chunk can hold many records
    (a busy stream read late): it is split once, not line by line, which would copy the
    rest of the buffer for every record. Blank lines are dropped."""

    def __init__(self) -> None:
        self._partial: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        if b"\n" not in chunk:
            self._partial.append(chunk)
            return []
        lines = chunk.split(b"\n")
        if self._partial:
            lines[0] = b"".join([*self._partial, lines[0]])
        self._partial = [lines.pop()] if lines[-1] else []
        return [line for line in lines if line.strip()]

    def end(self) -> list[bytes]:
        rest = b"".join(self._partial)
        self._partial = []
        return [rest] if rest.strip() else []


def _decode_line(line: bytes) -> dict[str, Any] | bytes:
    try:
        event = orjson.loads(line)
    except ValueError:
        return line
    return event if isinstance(event, dict) else line
