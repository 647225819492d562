"""The API client's throttles: one token bucket per clientset, as the reference has.

The reference operator builds one client-go clientset per API from the same
``rest.Config``: one for Kubernetes' own resources (pods, Jobs, Services,
ConfigMaps, Secrets, Events, Leases), one for MPIJobs, and one for each gang
scheduler's PodGroups. client-go gives every clientset a token bucket of its own
with ``--kube-api-qps``/``--kube-api-burst``, so an MPIJob status write or watch
never waits behind a burst of pod creates, and the process as a whole may send
more than ``--kube-api-qps``.

One :class:`~mpi_operator.client.kubeapi.KubeClient` serves all of those here; it
keeps one bucket per clientset and picks it by the request path's API group. (The
leader election has a client of its own, as the reference's has a clientset.)
"""

from __future__ import annotations

from mpi_operator.client.clock import Clock
from mpi_operator.client.ratelimit import FairTokenBucket

#: Kubernetes' own API groups (``/api/v1`` and every group not listed below).
KUBE = "kube"

#: The API group of each clientset other than Kubernetes' own.
CLIENTSET_OF_GROUP: dict[str, str] = {
    "kubeflow.org": "mpijob",
    # TensorStack's MPIJob: a clientset of its own, as a separate API.
    "batch.tensorstack.dev": "t9k",
    "scheduling.volcano.sh": "volcano",
    "scheduling.x-k8s.io": "scheduler-plugins",
}


def clientset_of(path: str) -> str:
    """The clientset that sends a request for ``path`` (``/apis/<group>/...``)."""
    if not path.startswith("/apis/"):
        return KUBE
    group = path[len("/apis/") :].split("/", 1)[0]
    return CLIENTSET_OF_GROUP.get(group, KUBE)


class ClientsetThrottles:
    """A :class:`FairTokenBucket` of ``qps``/``burst`` per clientset, made on first use;
    ``qps <= 0``: no throttling at all."""

    def __init__(self, qps: float, burst: int, clock: Clock, *, tick: float = 0.0) -> None:
        self.qps = qps
        self.burst = max(burst, 1)
        self._clock = clock
        self._tick = tick
        self._buckets: dict[str, FairTokenBucket] = {}

    def bucket(self, clientset: str) -> FairTokenBucket | None:
        if self.qps <= 0:
            return None
        bucket = self._buckets.get(clientset)
        if bucket is None:
            bucket = FairTokenBucket(self.qps, self.burst, self._clock, tick=self._tick)
            self._buckets[clientset] = bucket
        return bucket

    def for_path(self, path: str) -> FairTokenBucket | None:
        return self.bucket(clientset_of(path))

    async def wait(self, path: str) -> None:
        """Returns once a token of ``path``'s clientset is this request's."""
        bucket = self.for_path(path)
        if bucket is not None:
            await bucket.wait()
