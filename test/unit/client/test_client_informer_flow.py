"""An informer's requests belong to the shared request flow, whoever starts it."""

from __future__ import annotations

from typing import cast

from mpi_operator.client.informer import SharedInformer
from mpi_operator.client.kubeapi import CONFIGMAPS, KubeClient
from mpi_operator.client.ratelimit import current_flow, request_flow


async def test_an_informer_started_inside_a_jobs_request_flow_runs_in_the_shared_one() -> None:
    """A cache started on demand by a sync (T9k PodGroups) must not queue its lists and
    watch restarts behind that one job's pod creates."""
    inf = SharedInformer(cast(KubeClient, None), CONFIGMAPS)
    seen: list[str] = []

    async def run() -> None:
        seen.append(current_flow())

    inf.run = run  # type: ignore[method-assign]
    with request_flow("default/big-job"):
        task = inf.start()
    await task
    assert seen == [""]
