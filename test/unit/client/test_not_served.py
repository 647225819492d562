"""Which 404s say the API server does not serve a resource at all (a CRD not installed,
a built-in group's version not enabled) and which say an object is missing."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.client.errors import ApiError, is_not_served

NOT_SERVED_STATUS = {
    "kind": "Status",
    "status": "Failure",
    "message": "the server could not find the requested resource",
    "reason": "NotFound",
    "details": {},
    "code": 404,
}
MISSING_OBJECT = {
    "kind": "Status",
    "status": "Failure",
    "message": 'podgroups.scheduling.k8s.io "pi" not found',
    "reason": "NotFound",
    "details": {"name": "pi", "group": "scheduling.k8s.io", "kind": "podgroups"},
    "code": 404,
}


@pytest.mark.parametrize(
    ("status", "body", "served"),
    [
        pytest.param(404, "404 page not found", False, id="no-handler-for-the-group"),
        pytest.param(404, NOT_SERVED_STATUS, False, id="group-served-not-this-version"),
        pytest.param(404, MISSING_OBJECT, True, id="a-missing-object"),
        pytest.param(403, NOT_SERVED_STATUS, True, id="forbidden"),
    ],
)
def test_a_404_naming_no_object_says_the_resource_is_not_served(
    status: int, body: Any, served: bool
) -> None:
    assert is_not_served(ApiError(status, body)) is not served
