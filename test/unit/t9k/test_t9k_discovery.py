"""Whether the process serves T9k MPIJobs: the CRD check and the RBAC probe."""

from __future__ import annotations

from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry

from mpi_operator.client import ApiError, KubeClient, Resource
from mpi_operator.controller import ControllerOptions
from mpi_operator.controller.t9k import T9kMPIJobController, t9k_controller_if_served

SERVED = {"resources": [{"name": "mpijobs"}, {"name": "mpijobs/status"}]}


class DiscoveryClient:
    """Answers the discovery GET and the probing lists; records the lists."""

    def __init__(self, discovery: Any, list_error: ApiError | None = None) -> None:
        self.discovery = discovery
        self.list_error = list_error
        self.lists: list[tuple[str, str | None]] = []

    async def request(self, method: str, path: str, **_: Any) -> Any:
        assert (method, path) == ("GET", "/apis/batch.tensorstack.dev/v1beta1")
        if isinstance(self.discovery, ApiError):
            raise self.discovery
        return self.discovery

    async def list(self, resource: Resource, namespace: str | None, **kw: Any) -> Any:
        assert kw == {"limit": 1, "undecodable_items": True}
        self.lists.append((resource.plural, namespace))
        if self.list_error is not None:
            raise self.list_error
        return {"items": []}


async def _serve(
    client: DiscoveryClient, options: ControllerOptions | None = None
) -> T9kMPIJobController | None:
    return await t9k_controller_if_served(
        cast(KubeClient, client), options or ControllerOptions(), registry=CollectorRegistry()
    )


@pytest.mark.parametrize(
    ("discovery", "list_error", "served", "lists"),
    [
        (SERVED, None, True, [("mpijobs", None)]),
        ({"resources": [{"name": "other"}]}, None, False, []),
        (ApiError(404, reason="NotFound"), None, False, []),
        # The discovery call itself failing: not served, the process carries on.
        (ApiError(503, reason="ServiceUnavailable"), None, False, []),
        # The CRD without the RBAC rules: Kubeflow MPIJobs only, no crash loop.
        (SERVED, ApiError(403, reason="Forbidden"), False, [("mpijobs", None)]),
    ],
)
async def test_t9k_controller_only_when_served_and_allowed(
    discovery: Any, list_error: ApiError | None, served: bool, lists: list[Any]
) -> None:
    client = DiscoveryClient(discovery, list_error)
    got = await _serve(client)
    assert isinstance(got, T9kMPIJobController) is served
    assert got is None or got.client is client
    assert client.lists == lists


async def test_rbac_is_probed_in_every_watched_namespace() -> None:
    client = DiscoveryClient(SERVED)
    options = ControllerOptions(namespace=("team-a", "team-b"))
    assert await _serve(client, options) is not None
    assert client.lists == [("mpijobs", "team-a"), ("mpijobs", "team-b")]


async def test_other_errors_of_the_probe_are_raised() -> None:
    client = DiscoveryClient(SERVED, ApiError(500, reason="InternalError"))
    with pytest.raises(ApiError):
        await _serve(client)
