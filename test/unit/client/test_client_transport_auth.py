"""The bearer token of a configuration without a credentials keeper is sent as
kubernetes_asyncio's ApiClient sends it (its prefix, the Authorization header), and a
configuration without one sends no Authorization header."""

from __future__ import annotations

import pytest
from aiohttp import web
from local_http import serving

from mpi_operator.client.lean_imports import Configuration
from mpi_operator.client.transport import ApiTransport


async def echo(request: web.Request) -> web.Response:
    return web.json_response({"authorization": request.headers.get("Authorization")})


@pytest.mark.parametrize(
    ("api_key", "prefix", "sent"),
    [
        ({"BearerToken": "abc"}, {"BearerToken": "Bearer"}, "Bearer abc"),
        ({"BearerToken": "abc"}, {}, "abc"),
        ({}, {}, None),
    ],
)
async def test_the_configurations_bearer_token_is_the_authorization_header(
    api_key: dict[str, str], prefix: dict[str, str], sent: str | None
) -> None:
    app = web.Application()
    app.router.add_get("/who", echo)
    async with serving(app) as url:
        config = Configuration(host=url, api_key=api_key, api_key_prefix=prefix)
        async with ApiTransport(config, qps=-1) as transport:
            assert await transport.request("GET", "/who") == {"authorization": sent}
