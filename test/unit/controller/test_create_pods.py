"""Pods a sync created are kept, until the sync ends, in the form the cache keeps
(:func:`~mpi_operator.controller.core.pods.slim_pod`), not as the API returned them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.errors import ApiError
from mpi_operator.controller.core.context import CoreContext
from mpi_operator.controller.core.owner import Owner
from mpi_operator.controller.core.pods import create_pods
from mpi_operator.controller.core.state import JobState

Obj = dict[str, Any]


class EchoingClient:
    """Answers a create with the object sent, as the API server would (plus its fields);
    a name in ``existing`` exists already, and a get answers it."""

    def __init__(self, existing: dict[str, Obj] | None = None) -> None:
        self.created: list[str] = []
        self.unread = 0
        self.existing = existing or {}

    async def create(
        self, resource: Any, namespace: str | None, body: Obj, *, discard_answer: bool = False
    ) -> Obj:
        name = body["metadata"]["name"]
        if name in self.existing:
            raise ApiError(409, {"reason": "AlreadyExists", "message": "exists"})
        self.created.append(name)
        self.unread += discard_answer
        return {} if discard_answer else copy.deepcopy(body)

    async def get(self, resource: Any, namespace: str | None, name: str) -> Obj:
        return copy.deepcopy(self.existing[name])


def full_pod(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "managedFields": [{"manager": "kubelet"}]},
        "spec": {"containers": [{"name": "worker", "image": "busybox"}], "nodeName": "n1"},
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


JOB = {"metadata": {"name": "pi", "namespace": "ns", "uid": "u1"}}
OWNER = Owner.of(JOB, "kubeflow.org/v2beta1", "MPIJob", {})


def adopted(name: str) -> Obj:
    """The pod as a get returns it: it exists already, and the job controls it."""
    pod = full_pod(name)
    pod["metadata"]["ownerReferences"] = [{"uid": "u1", "controller": True}]
    return pod


@pytest.mark.parametrize(
    ("existing", "created"),
    [
        pytest.param({}, ["pi-worker-0", "pi-worker-1"], id="created"),
        pytest.param({"pi-worker-1": adopted("pi-worker-1")}, ["pi-worker-0"], id="adopted"),
    ],
)
@pytest.mark.parametrize("answer", [True, False], ids=["answer-read", "answer-unread"])
async def test_created_pods_are_kept_slim(
    existing: dict[str, Obj], created: list[str], answer: bool
) -> None:
    clock, client = FakeClock(), EchoingClient(existing)
    ctx = CoreContext(
        client=client,  # type: ignore[arg-type]
        recorder=None,  # type: ignore[arg-type]
        clock=clock,
        state=JobState(clock, lambda key, message: False),
        requeue=lambda key: None,
        requeue_after=lambda key, seconds: None,
        continuing=lambda key: True,
    )
    names = ["pi-worker-0", "pi-worker-1"]
    pods = [(name, lambda name=name: full_pod(name)) for name in names]
    made = await create_pods(ctx, OWNER, pods, "", ("FailedCreatePod", ""), answer=answer)
    assert client.created == created
    assert sorted(made) == names
    for name, pod in made.items():
        assert pod["metadata"]["name"] == name
        assert "managedFields" not in pod["metadata"]
        assert pod["spec"] == {"nodeName": "n1"}
        assert pod["status"] == {"phase": "Pending"}
    assert client.unread == (0 if answer else len(created))


async def test_a_pod_created_without_a_status_counts_as_pending() -> None:
    """Its answer unread, a new pod has the phase the API server sets on every new pod."""
    clock, client = FakeClock(), EchoingClient()
    ctx = CoreContext(
        client=client,  # type: ignore[arg-type]
        recorder=None,  # type: ignore[arg-type]
        clock=clock,
        state=JobState(clock, lambda key, message: False),
        requeue=lambda key: None,
        requeue_after=lambda key, seconds: None,
        continuing=lambda key: True,
    )
    bare = {"metadata": {"name": "pi-worker-0", "labels": {"a": "b"}}, "spec": {}}
    made = await create_pods(
        ctx, OWNER, [("pi-worker-0", lambda: bare)], "", ("F", ""), answer=False
    )
    assert made["pi-worker-0"] == {
        "metadata": {"name": "pi-worker-0", "labels": {"a": "b"}},
        "spec": {},
        "status": {"phase": "Pending"},
    }
