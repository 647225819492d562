"""PodGroup spec comparison and update: what counts as drift, and what an update keeps."""

from __future__ import annotations

from typing import Any

import pytest
from podgroup_maker import (
    PLUGINS,
    VOLCANO,
    Obj,
    container,
    job,
    replica,
    volcano_pg,
)

from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.builders.podgroup import (
    new_pod_group,
    pod_group_specs_equal,
    updated_pod_group,
)

# -- spec comparison and update ------------------------------------------------------


def _pg(spec: Obj | None, **extra: Any) -> Obj:
    out: Obj = {"metadata": {"name": "test"}, **extra}
    if spec is not None:
        out["spec"] = spec
    return out


@pytest.mark.parametrize(
    ("gang", "a", "b", "equal"),
    [
        pytest.param(VOLCANO, {"minMember": 3}, {"minMember": 3}, True, id="v same"),
        pytest.param(VOLCANO, {"minMember": 3}, {"minMember": 4}, False, id="v minMember"),
        pytest.param(VOLCANO, {}, {"minMember": 0, "queue": ""}, True, id="v zero values"),
        pytest.param(VOLCANO, None, {}, True, id="v missing spec"),
        pytest.param(VOLCANO, {"queue": "a"}, {"queue": "b"}, False, id="v queue"),
        pytest.param(VOLCANO, {"priorityClassName": "a"}, {}, False, id="v priorityClassName"),
        pytest.param(
            VOLCANO,
            {"minResources": {"cpu": "1", "memory": "1Gi"}},
            {"minResources": {"cpu": "1000m", "memory": "1024Mi"}},
            True,
            id="v quantities compare by value",
        ),
        pytest.param(
            VOLCANO,
            {"minResources": {"cpu": "1"}},
            {"minResources": {"cpu": "2"}},
            False,
            id="v quantity differs",
        ),
        pytest.param(
            VOLCANO,
            {"minResources": {"cpu": "1"}},
            {"minResources": {"cpu": "1", "memory": "1"}},
            False,
            id="v resource names differ",
        ),
        pytest.param(
            VOLCANO, {"minResources": {}}, {}, False, id="v empty minResources is not unset"
        ),
        pytest.param(VOLCANO, {"minResources": None}, {}, True, id="v null minResources is unset"),
        pytest.param(
            VOLCANO,
            {"minTaskMember": {}, "subGroupPolicy": []},
            {},
            True,
            id="v empty map and list are unset",
        ),
        pytest.param(VOLCANO, {"minTaskMember": {"a": 1}}, {}, False, id="v minTaskMember differs"),
        pytest.param(
            VOLCANO,
            {"networkTopology": {"mode": "hard"}},
            {},
            False,
            id="v networkTopology set on one side",
        ),
        pytest.param(
            VOLCANO,
            {"minMember": 1, "unknownField": "x"},
            {"minMember": 1},
            True,
            id="v unknown fields ignored",
        ),
        pytest.param(
            PLUGINS,
            {"minMember": 3, "scheduleTimeoutSeconds": 0},
            {"minMember": 3, "scheduleTimeoutSeconds": 0},
            True,
            id="p same",
        ),
        pytest.param(
            PLUGINS,
            {"scheduleTimeoutSeconds": 0},
            {},
            False,
            id="p scheduleTimeoutSeconds 0 is not unset",
        ),
        pytest.param(
            PLUGINS,
            {"scheduleTimeoutSeconds": 10},
            {"scheduleTimeoutSeconds": 20},
            False,
            id="p scheduleTimeoutSeconds differs",
        ),
        pytest.param(PLUGINS, {"minResources": {}}, {}, True, id="p empty minResources is unset"),
        pytest.param(
            PLUGINS,
            {"minResources": {"memory": "2Gi"}},
            {"minResources": {"memory": "2048Mi"}},
            True,
            id="p quantities compare by value",
        ),
        pytest.param(
            PLUGINS,
            {"minMember": 2, "queue": "ignored"},
            {"minMember": 2},
            True,
            id="p fields of the other kind ignored",
        ),
    ],
)
def test_pod_group_specs_equal(
    gang: GangScheduling, a: Obj | None, b: Obj | None, equal: bool
) -> None:
    assert pod_group_specs_equal(gang, _pg(a), _pg(b)) is equal
    assert pod_group_specs_equal(gang, _pg(b), _pg(a)) is equal


def test_pod_group_specs_equal_ignores_metadata_and_status() -> None:
    a = _pg({"minMember": 1}, status={"phase": "Running"})
    b = {"metadata": {"name": "other"}, "spec": {"minMember": 1}}
    assert pod_group_specs_equal(VOLCANO, a, b)


def test_new_pod_group_equals_itself_after_a_go_round_trip() -> None:
    mpi_job = job(
        launcher=replica(1, container({"cpu": "1", "memory": "2Gi"})),
        worker=replica(2, container({"cpu": "10", "memory": "20Gi"})),
    )
    for gang in (VOLCANO, PLUGINS):
        desired = new_pod_group(mpi_job, gang, {})
        stored = {**desired, "spec": {**desired["spec"]}, "status": {"phase": "Pending"}}
        stored["spec"]["minResources"] = {"cpu": "21000m", "memory": "43008Mi"}
        assert pod_group_specs_equal(gang, stored, desired)


def test_updated_pod_group_replaces_only_the_spec() -> None:
    existing = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "test", "resourceVersion": "7"},
        "spec": {"minMember": 1, "queue": "old"},
        "status": {"phase": "Running"},
    }
    desired = volcano_pg({"minMember": 3, "minResources": {"cpu": "1"}})
    got = updated_pod_group(existing, desired)
    assert got == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "test", "resourceVersion": "7"},
        "spec": {"minMember": 3, "minResources": {"cpu": "1"}},
        "status": {"phase": "Running"},
    }
    got["spec"]["minResources"]["cpu"] = "2"
    assert desired["spec"]["minResources"] == {"cpu": "1"}
    assert existing["spec"] == {"minMember": 1, "queue": "old"}
