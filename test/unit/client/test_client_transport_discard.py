"""A request whose answer is dropped (``discard_body``, the delete of a collection),
against a local HTTP server: a big successful body is read and thrown away, an error's
body is still decoded into the ApiError."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from local_http import serving

from mpi_operator.client.errors import ApiError
from mpi_operator.client.kubeapi import PODS, KubeClient
from mpi_operator.client.lean_imports import Configuration

#: About 8 MiB: what a delete of 2,000 pods answers with.
BIG = b'{"kind":"PodList","items":[' + b",".join([b'{"x":"' + b"y" * 4000 + b'"}'] * 2000) + b"]}"


class Server:
    def __init__(self) -> None:
        self.queries: list[dict[str, str]] = []

    async def delete_pods(self, request: web.Request) -> web.Response:
        self.queries.append(dict(request.query))
        if request.match_info["ns"] == "denied":
            return web.json_response(
                {"kind": "Status", "reason": "Forbidden", "message": "no", "code": 403},
                status=403,
            )
        return web.Response(body=BIG, content_type="application/json")


@pytest.fixture
async def served() -> AsyncIterator[tuple[Server, KubeClient]]:
    server = Server()
    app = web.Application()
    app.router.add_delete("/api/v1/namespaces/{ns}/pods", server.delete_pods)
    async with serving(app) as url:
        client = KubeClient(Configuration(host=url), qps=-1)
        try:
            yield server, client
        finally:
            await client.close()


async def test_a_collection_delete_sends_its_selectors_and_drops_the_answer(
    served: tuple[Server, KubeClient],
) -> None:
    server, client = served
    result = await client.delete_collection(
        PODS, "ns", label_selector="a=b,c=d", field_selector="status.phase!=Failed"
    )
    assert result is None
    assert server.queries == [{"labelSelector": "a=b,c=d", "fieldSelector": "status.phase!=Failed"}]


async def test_a_refused_collection_delete_raises_the_servers_status(
    served: tuple[Server, KubeClient],
) -> None:
    _, client = served
    with pytest.raises(ApiError) as raised:
        await client.delete_collection(PODS, "denied", label_selector="a=b")
    assert raised.value.status == 403
    assert "no" in str(raised.value)
