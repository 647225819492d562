"""Pods a sync created are kept, until the sync ends, in the form the cache keeps
(:func:`~mpi_operator.controller.core.pod_cache.slim_pod`), not as the API returned them."""

from __future__ import annotations

import copy
from typing import Any

from mpi_operator.client.clock import FakeClock
from mpi_operator.controller.core.context import CoreContext
from mpi_operator.controller.core.expectations import CreationExpectations
from mpi_operator.controller.core.owner import Owner
from mpi_operator.controller.core.pods import create_pods

Obj = dict[str, Any]


class EchoingClient:
    """Answers a create with the object sent, as the API server would (plus its fields)."""

    def __init__(self) -> None:
        self.created: list[str] = []

    async def create(self, resource: Any, namespace: str | None, body: Obj) -> Obj:
        self.created.append(body["metadata"]["name"])
        return copy.deepcopy(body)


def full_pod(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "managedFields": [{"manager": "kubelet"}]},
        "spec": {"containers": [{"name": "worker", "image": "busybox"}], "nodeName": "n1"},
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


async def test_created_pods_are_kept_slim() -> None:
    clock, client = FakeClock(), EchoingClient()
    ctx = CoreContext(
        client=client,  # type: ignore[arg-type]
        recorder=None,  # type: ignore[arg-type]
        clock=clock,
        expectations=CreationExpectations(clock),
    )
    job = {"metadata": {"name": "pi", "namespace": "ns", "uid": "u1"}}
    owner = Owner.of(job, "kubeflow.org/v2beta1", "MPIJob", {})
    names = ["pi-worker-0", "pi-worker-1"]
    pods = [(name, lambda name=name: full_pod(name)) for name in names]
    made = await create_pods(ctx, owner, pods, "", ("FailedCreatePod", ""))
    assert client.created == names
    assert sorted(made) == names
    for name, pod in made.items():
        assert pod["metadata"]["name"] == name
        assert "managedFields" not in pod["metadata"]
        assert pod["spec"] == {"nodeName": "n1"}
        assert pod["status"] == {"phase": "Pending"}
