"""One throttle per clientset: which requests share a token bucket, as in the reference."""

from __future__ import annotations

import asyncio

import pytest

from mpi_operator.client.clientsets import KUBE, ClientsetThrottles, clientset_of
from mpi_operator.client.clock import FakeClock
from mpi_operator.client.resources import CONFIGMAPS, EVENTS, JOBS, MPIJOBS, PODS, SECRETS, SERVICES


@pytest.mark.parametrize(
    ("path", "clientset"),
    [
        (PODS.path("ns"), KUBE),
        (SERVICES.path("ns", "pi"), KUBE),
        (CONFIGMAPS.path("ns", "pi-config"), KUBE),
        (SECRETS.path("ns", "pi-ssh"), KUBE),
        (EVENTS.path("ns"), KUBE),
        (JOBS.path("ns", "pi-launcher"), KUBE),
        ("/apis/coordination.k8s.io/v1/namespaces/mpi-operator/leases/mpi-operator", KUBE),
        ("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", KUBE),
        ("/apis", KUBE),
        ("/version", KUBE),
        (MPIJOBS.path("ns", "pi", "status"), "mpijob"),
        (MPIJOBS.path(None), "mpijob"),
        ("/apis/batch.tensorstack.dev/v1beta1/namespaces/ns/mpijobs/pi", "t9k"),
        ("/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups", "volcano"),
        ("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups/pi", "scheduler-plugins"),
        # A group that only starts like one of ours is Kubernetes' own.
        ("/apis/kubeflow.org.example/v1/things", KUBE),
    ],
)
def test_each_request_goes_to_the_clientset_of_its_api_group(path: str, clientset: str) -> None:
    assert clientset_of(path) == clientset


async def test_a_burst_of_pod_creates_does_not_hold_back_an_mpijob_status_write() -> None:
    """The reference's MPIJob clientset has a budget of its own: its status write goes
    out at once while the pods' clientset has no token left."""
    clock = FakeClock()
    throttles = ClientsetThrottles(10, 2, clock)
    sent: list[str] = []

    async def send(path: str) -> None:
        await throttles.wait(path)
        sent.append(path)

    pods = [asyncio.create_task(send(PODS.path("ns"))) for _ in range(4)]
    status = asyncio.create_task(send(MPIJOBS.path("ns", "pi", "status")))
    await FakeClock.settle()
    assert sent.count(PODS.path("ns")) == 2  # the kube bucket's burst
    assert MPIJOBS.path("ns", "pi", "status") in sent
    assert throttles.for_path(PODS.path("ns")) is throttles.bucket(KUBE)
    assert throttles.for_path(JOBS.path("ns")) is throttles.bucket(KUBE)
    assert throttles.bucket("mpijob") is not throttles.bucket(KUBE)
    clock.step(0.2 + 1e-7)
    await clock.settle(3)
    await asyncio.gather(*pods, status)
    assert len(sent) == 5


def test_no_buckets_when_throttling_is_off() -> None:
    throttles = ClientsetThrottles(-1, 0, FakeClock())
    assert throttles.for_path(PODS.path("ns")) is None
    assert throttles.for_path(MPIJOBS.path("ns")) is None
