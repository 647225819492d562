"""The Kubernetes Workload API's PodGroup (``scheduling.k8s.io/v1alpha2``), for both kinds.

A gang of ``minCount`` pods that the default kube-scheduler binds all at once or not at
all; a pod joins it by name (``spec.schedulingGroup.podGroupName``, immutable), so it
is set when the pod is built. The API has no queue, priority, resources or timeout.
"""

from __future__ import annotations

from mpi_operator.api.object_model import Obj
from mpi_operator.api.scheduling import WORKLOAD_API_API_VERSION

POD_GROUP_KIND = "PodGroup"


def workload_pod_group(metadata: Obj, min_count: int) -> Obj:
    """The PodGroup with ``metadata`` whose gang is ``min_count`` pods."""
    return {
        "apiVersion": WORKLOAD_API_API_VERSION,
        "kind": POD_GROUP_KIND,
        "metadata": metadata,
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def join_pod_group(pod_spec: Obj, group: str) -> None:
    """Makes the pod of ``pod_spec`` (owned by the caller) a member of ``group``; its
    scheduler stays the one it names."""
    pod_spec["schedulingGroup"] = {"podGroupName": group}
