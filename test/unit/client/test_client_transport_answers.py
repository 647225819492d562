"""What the API transport makes of a successful answer that is not the API server's:
a 2xx body that is not a JSON object (a proxy's HTML page) is an error the caller
retries, never a value for it to misread (a reflector that took it for a list died)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from local_http import client_to

from mpi_operator.client.errors import ApiError
from mpi_operator.client.transport import ApiTransport


async def html(request: web.Request) -> web.Response:
    return web.Response(text="<html>captive portal</html>", content_type="text/html")


async def array(request: web.Request) -> web.Response:
    return web.json_response([1, 2])


async def empty(request: web.Request) -> web.Response:
    return web.Response(status=200)


async def obj(request: web.Request) -> web.Response:
    return web.json_response({"kind": "PodList", "items": []})


@pytest.fixture
async def transport() -> AsyncIterator[ApiTransport]:
    app = web.Application()
    for path, handler in (("/html", html), ("/array", array), ("/empty", empty), ("/obj", obj)):
        app.router.add_get(path, handler)
    async with client_to(app, lambda api: ApiTransport(api, qps=-1)) as client:
        yield client


@pytest.mark.parametrize("path", ["/html", "/array"])
async def test_a_2xx_body_that_is_not_a_json_object_is_an_api_error(
    transport: ApiTransport, path: str
) -> None:
    with pytest.raises(ApiError) as raised:
        await transport.request("GET", path)
    assert raised.value.status == 502
    assert f"the answer to GET {path} is not a JSON object" in str(raised.value)


async def test_json_objects_and_empty_bodies_come_back_as_they_are(
    transport: ApiTransport,
) -> None:
    assert await transport.request("GET", "/obj") == {"kind": "PodList", "items": []}
    assert await transport.request("GET", "/empty") is None
