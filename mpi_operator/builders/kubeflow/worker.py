"""Worker pods: ``<job>-worker-<index>``, one per Worker replica."""

from __future__ import annotations

from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.api.v2beta1 import REPLICA_INDEX_LABEL, MPIJob, ReplicaType
from mpi_operator.builders.kubeflow.common import (
    WORKER,
    append_env,
    controller_owner_reference,
    default_labels,
    run_launcher_as_worker,
    set_pod_identity,
    set_restart_policy,
    setup_ssh,
    worker_name,
)
from mpi_operator.builders.kubeflow.podgroup import decorate_pod_template
from mpi_operator.builders.meta import own_dict, own_item

SSHD_COMMAND = ["/usr/sbin/sshd", "-De"]


def worker_replica_index_label(job: MPIJob, index: int) -> str:
    """The replica-index label; shifted by one when the launcher is worker 0."""
    return str(index + 1 if run_launcher_as_worker(job) else index)


def worker_replicas(job: MPIJob) -> int:
    spec = job.replica_spec(ReplicaType.WORKER)
    return spec.replicas or 0 if spec is not None else 0


def new_worker(job: MPIJob, index: int, gang: GangScheduling | None = None) -> Obj:
    spec = job.replica_spec(ReplicaType.WORKER)
    if spec is None:
        raise ValueError(f"MPIJob {job.namespace}/{job.name} has no Worker replica spec")
    name = worker_name(job, index)
    # Copy-on-write (see own_dict): the pod shares what it does not change with the job.
    template: Obj = dict(spec.template)
    metadata = metadata_of(template)
    labels = {**(metadata.get("labels") or {}), **default_labels(job.name, WORKER)}
    labels[REPLICA_INDEX_LABEL] = worker_replica_index_label(job, index)
    template["metadata"] = {**metadata, "labels": labels}
    pod_spec = own_dict(template, "spec")
    set_pod_identity(pod_spec, job, name)
    # Intel MPI and MPICH workers reach the launcher by its short hostname.
    search = f"{job.name}.{job.namespace}.svc.cluster.local"
    if pod_spec.get("dnsConfig") is None:
        pod_spec["dnsConfig"] = {"searches": [search]}
    else:
        dns_config = own_dict(pod_spec, "dnsConfig")
        dns_config["searches"] = [*(dns_config.get("searches") or []), search]
    set_restart_policy(pod_spec, spec)
    container = own_item(pod_spec, "containers", 0)  # main_container(pod_spec) from here
    if not container.get("command") and not container.get("args"):
        container["command"] = list(SSHD_COMMAND)
    append_env(container, [{"name": "K_MPI_JOB_ROLE", "value": WORKER}])
    setup_ssh(pod_spec, job)
    if gang is not None:
        template = decorate_pod_template(template, job.name, gang)
    meta = template["metadata"]
    pod_meta: Obj = {
        "name": name,
        "namespace": job.namespace,
        "labels": meta["labels"],
        "ownerReferences": [controller_owner_reference(job)],
    }
    if meta.get("annotations"):
        pod_meta["annotations"] = meta["annotations"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": template["spec"]}
