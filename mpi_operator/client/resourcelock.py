"""The leader election record and the Lease that holds it, as client-go's
``tools/leaderelection/resourcelock`` (``LeaderElectionRecord``, ``LeaseLock``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpi_operator.client.kubeapi import LEASES, KubeClient


@dataclass
class LeaderElectionRecord:
    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    leader_transitions: int = 0

    def to_spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.leader_transitions,
        }

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> LeaderElectionRecord:
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            leader_transitions=int(spec.get("leaseTransitions") or 0),
        )


class LeaseLock:
    """Reads and writes the election record in a Lease object."""

    def __init__(self, client: KubeClient, namespace: str, name: str) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.lease: dict[str, Any] | None = None

    async def get(self) -> tuple[LeaderElectionRecord, dict[str, Any]]:
        self.lease = await self.client.get(LEASES, self.namespace, self.name)
        spec = dict(self.lease.get("spec") or {})
        return LeaderElectionRecord.from_spec(spec), spec

    async def create(self, record: LeaderElectionRecord) -> None:
        self.lease = await self.client.create(
            LEASES,
            self.namespace,
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": record.to_spec(),
            },
        )

    async def update(self, record: LeaderElectionRecord) -> None:
        if self.lease is None:
            raise RuntimeError("lease not initialised; call get or create first")
        body = dict(self.lease)
        body["spec"] = record.to_spec()
        self.lease = await self.client.replace(LEASES, self.namespace, self.name, body)
