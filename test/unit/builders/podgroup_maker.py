"""Small MPIJobs, containers and expected PodGroups for the PodGroup builder tests."""

from __future__ import annotations

from typing import Any

from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.api.v2beta1 import MPIJob

Obj = dict[str, Any]

VOLCANO = GangScheduling.volcano()
PLUGINS = GangScheduling.scheduler_plugins("default-scheduler")
WORKLOAD = GangScheduling.workload_api()

OWNER = {
    "apiVersion": "kubeflow.org/v2beta1",
    "kind": "MPIJob",
    "name": "test",
    "uid": "uid-1",
    "controller": True,
    "blockOwnerDeletion": True,
}
METADATA = {"name": "test", "namespace": "ns", "ownerReferences": [OWNER]}


def container(requests: Obj | None = None, limits: Obj | None = None) -> Obj:
    resources: Obj = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "image": "img", "resources": resources}


def replica(replicas: int | None, *containers: Obj, priority_class: str = "") -> Obj:
    spec: Obj = {"containers": list(containers)}
    if priority_class:
        spec["priorityClassName"] = priority_class
    out: Obj = {"template": {"spec": spec}}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def job(
    launcher: Obj | None = None,
    worker: Obj | None = None,
    policy: Obj | None = None,
    annotations: Obj | None = None,
    **spec: Any,
) -> MPIJob:
    meta: Obj = {"name": "test", "namespace": "ns", "uid": "uid-1"}
    if annotations is not None:
        meta["annotations"] = annotations
    replicas: Obj = {}
    if launcher is not None:
        replicas["Launcher"] = launcher
    if worker is not None:
        replicas["Worker"] = worker
    body: Obj = {"mpiReplicaSpecs": replicas, **spec}
    if policy is not None:
        body["runPolicy"] = {"schedulingPolicy": policy}
    return MPIJob.from_dict({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                             "metadata": meta, "spec": body})  # fmt: skip


def _pod_group(api_version: str, spec: Obj) -> Obj:
    return {"apiVersion": api_version, "kind": "PodGroup", "metadata": METADATA, "spec": spec}


def volcano_pg(spec: Obj) -> Obj:
    return _pod_group("scheduling.volcano.sh/v1beta1", spec)


def plugins_pg(spec: Obj) -> Obj:
    return _pod_group("scheduling.x-k8s.io/v1alpha1", spec)


MIN_RESOURCES = {"cpu": "100", "memory": "512Gi", "example.com/gpu": "40"}
