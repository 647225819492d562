"""A gang scheduler's PodGroup API that the cluster does not serve stops only the jobs
that need it: the start-up checks let the process start (its warning names the API),
and the message says what to do, differently for a CRD and for a built-in API group."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.client.errors import ApiError
from mpi_operator.client.resources import (
    POD_GROUPS_SCHEDULER_PLUGINS,
    POD_GROUPS_VOLCANO,
    POD_GROUPS_WORKLOAD_API,
    PRIORITY_CLASSES,
)
from mpi_operator.controller.core.crds import GANG_SCHEDULING_FLAG, missing_crd, not_served
from mpi_operator.server.preflight import Preflight, PreflightError


class _Client:
    """Answers every request; a LIST of ``unserved`` 404s as an API server does for a
    path it does not serve (no Status body)."""

    class configuration:  # the attribute the preflight reads
        host = "https://api.test"

    def __init__(self, unserved: str) -> None:
        self.unserved = unserved

    async def request(self, method: str, path: str, **_: Any) -> Any:
        if path.startswith(self.unserved):
            raise ApiError(404, "404 page not found")
        return {}


def test_a_built_in_api_group_is_not_served_and_names_its_gates_and_runtime_config() -> None:
    message = not_served(POD_GROUPS_WORKLOAD_API, GANG_SCHEDULING_FLAG)
    assert message.startswith("the API group scheduling.k8s.io/v1alpha2 (PodGroup) is not served")
    assert "GenericWorkload=true,GangScheduling=true" in message
    assert "--runtime-config=scheduling.k8s.io/v1alpha2=true" in message
    assert "CRD" not in message
    err = missing_crd(POD_GROUPS_WORKLOAD_API, GANG_SCHEDULING_FLAG, ApiError(404, "x"))
    assert str(err).startswith(message)


@pytest.mark.parametrize("resource", [POD_GROUPS_VOLCANO, POD_GROUPS_SCHEDULER_PLUGINS])
def test_a_crd_backed_api_is_not_installed(resource: Any) -> None:
    message = not_served(resource, GANG_SCHEDULING_FLAG)
    assert message == (
        f'the CRD "podgroups.{resource.group}" ({resource.api_version} PodGroup) is not '
        "installed; install it to use --gang-scheduling"
    )


@pytest.mark.parametrize(
    "gang", [GangScheduling.workload_api(), GangScheduling.volcano()], ids=["workload", "volcano"]
)
async def test_the_preflight_lets_the_operator_start_without_the_gang_api(
    gang: GangScheduling,
) -> None:
    resource = (
        POD_GROUPS_WORKLOAD_API if gang == GangScheduling.workload_api() else POD_GROUPS_VOLCANO
    )
    client = _Client(f"/apis/{resource.group}/{resource.version}/")
    preflight = Preflight(client, "ns", "ns", gang=gang)  # type: ignore[arg-type]
    with capture_logs() as logs:
        await preflight.check_list(resource, "ns")
    (warning,) = [e for e in logs if e["log_level"] == "warning"]
    assert warning["reason"] == not_served(resource, GANG_SCHEDULING_FLAG)


async def test_another_api_not_served_still_stops_the_process() -> None:
    client = _Client("/apis/scheduling.k8s.io/v1/")
    gang = GangScheduling.workload_api()
    preflight = Preflight(client, "ns", "ns", gang=gang)  # type: ignore[arg-type]
    with pytest.raises(
        PreflightError, match=r"scheduling.k8s.io/v1 \(PriorityClass\) is not served"
    ):
        await preflight.check_list(PRIORITY_CLASSES, None)
