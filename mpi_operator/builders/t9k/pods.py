"""Worker pods ``<job>-worker-<i>`` and the launcher pod ``<job>-launcher``.

Both start from ``spec.worker.template``; the MPI container is the one named
``mpi-worker``, else the first. Workers run ``<sshdPath> -De``; the launcher
keeps only the MPI container, without GPUs, running the generated mpirun
line, after an init container that waits until every worker resolves and
accepts connections on the SSH port.

Run modes change the commands: in debug mode the launcher runs ``sleep inf``
and workers sshd unless ``replicaSpecs`` override them; after a resume
(``resumed``), ``resumeSpecs`` override command and args when given. Both
can drop the launcher's init container with ``skipInitContainer``. Pods are
annotated with the mode they were built for (``batch.tensorstack.dev/run-mode``:
normal, debug, resumed) so the controller replaces them when the mode changes.

Pods of a job that names the t9k scheduler go to it; otherwise, with the operator's
``--gang-scheduling=workload-api``, they join the job's Workload API PodGroup.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.api.t9k import (
    GROUP,
    GROUP_NAME_LABEL,
    QUEUE_LABEL,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
    T9K_SCHEDULER_NAME,
    MPIJob,
    ReplicaType,
)
from mpi_operator.builders.meta import own_dict, own_item
from mpi_operator.builders.ssh import ROOT_SSH_PATH, SSH_AUTH_VOLUME, ssh_secret_volume
from mpi_operator.builders.t9k.common import (
    GPU_RESOURCE,
    SSH_PORT,
    config_name,
    job_labels,
    launcher_name,
    mpi_container_index,
    owner_reference,
    secret_name,
    worker_name,
)
from mpi_operator.builders.t9k.config import CONFIG_MOUNT_PATH, HOSTFILE_KEY, HOSTFILE_PATH
from mpi_operator.builders.workload_api import join_pod_group

#: The launcher's init container image: busybox 1.36 (1.36.1), pinned by the digest of
#: its multi-arch image index on Docker Hub, so that a re-pushed tag cannot change what
#: runs in every launcher pod.
DEFAULT_INIT_IMAGE = (
    "busybox:1.36@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662"
)
RUN_MODE_ANNOTATION = f"{GROUP}/run-mode"
RUN_MODE_NORMAL = "normal"
RUN_MODE_DEBUG = "debug"
RUN_MODE_RESUMED = "resumed"
INIT_CONTAINER_NAME = "wait-for-workers"
CONFIG_VOLUME = "mpi-job-config"
DEBUG_LAUNCHER_COMMAND = ["sleep", "inf"]

WAIT_FOR_WORKERS_SCRIPT = (
    f"for host in $(cut -d' ' -f1 {HOSTFILE_PATH}); do\n"
    f'  until nslookup "$host" >/dev/null 2>&1 && nc -z -w 2 "$host" {SSH_PORT}; do\n'
    f'    echo "waiting for $host:{SSH_PORT}"; sleep 1\n'
    "  done\n"
    "done\n"
)


@dataclass(frozen=True, slots=True)
class _Override:
    command: list[str] | None = None
    args: list[str] | None = None
    skip_init_container: bool = False


def _override(job: MPIJob, replica_type: ReplicaType, resumed: bool) -> _Override | None:
    debug = job.debug
    if debug is not None:
        spec = debug.spec_for(replica_type.value)
        default = DEBUG_LAUNCHER_COMMAND if replica_type is ReplicaType.LAUNCHER else None
        if spec is None:
            return _Override(command=default)
        return _Override(spec.command or default, None, bool(spec.skip_init_container))
    pause = job.pause
    if resumed and pause is not None:
        resume = pause.spec_for(replica_type.value)
        if resume is not None:
            return _Override(resume.command, resume.args, bool(resume.skip_init_container))
    return None


def mpirun_command(job: MPIJob) -> list[str]:
    """``<mpiHome>/bin/mpirun [--prefix <mpiHome>] --hostfile ... --mca k v ... <extra> <cmd>``."""
    home = job.spec.mpi_home or ""
    command = [f"{home.rstrip('/')}/bin/mpirun" if home else "mpirun"]
    if home:
        command += ["--prefix", home]
    command += ["--hostfile", HOSTFILE_PATH]
    mca = job.spec.mca or {}
    for key in sorted(mca):
        command += ["--mca", key, mca[key]]
    return command + list(job.worker.extra_mpi_args or []) + list(job.worker.cmd or [])


def _set_command(container: Obj, command: list[str], override: _Override | None) -> None:
    container.pop("args", None)
    container["command"] = list(command)
    if override is None:
        return
    if override.command:
        container["command"] = list(override.command)
    if override.args:
        container["args"] = list(override.args)


def _ssh_volume(job: MPIJob) -> Obj:
    return ssh_secret_volume(secret_name(job), job.spec.ssh.ssh_auth_mount_path or ROOT_SSH_PATH)


def _mount(container: Obj, name: str, path: str) -> None:
    container["volumeMounts"] = [
        *(container.get("volumeMounts") or []),
        {"name": name, "mountPath": path},
    ]


def run_mode(job: MPIJob, resumed: bool) -> str:
    """The mode pods are built for; a pod of another mode is replaced."""
    if job.debug is not None:
        return RUN_MODE_DEBUG
    return RUN_MODE_RESUMED if resumed else RUN_MODE_NORMAL


def pod_run_mode(pod: Obj) -> str:
    annotations = metadata_of(pod).get("annotations") or {}
    return str(annotations.get(RUN_MODE_ANNOTATION) or RUN_MODE_NORMAL)


def _pod(
    job: MPIJob,
    name: str,
    replica_type: ReplicaType,
    index: int,
    resumed: bool,
    workload_api: bool,
) -> tuple[Obj, Obj]:
    """The pod skeleton from the worker template, and its MPI container. Copy-on-write
    (see own_dict): the pod shares with the job every part it does not change."""
    template: Obj = dict(job.worker.template)
    meta = metadata_of(template)
    labels = {
        **(meta.get("labels") or {}),
        **job_labels(job),
        REPLICA_TYPE_LABEL: replica_type.value,
        REPLICA_INDEX_LABEL: str(index),
    }
    pod_spec = own_dict(template, "spec")
    scheduler = job.t9k_scheduler
    if scheduler is not None:
        labels[GROUP_NAME_LABEL] = job.name
        labels[QUEUE_LABEL] = scheduler.queue or ""
        pod_spec["schedulerName"] = T9K_SCHEDULER_NAME
    elif workload_api:
        join_pod_group(pod_spec, job.name)
    pod_meta: Obj = {"name": name, "namespace": job.namespace, "labels": labels}
    pod_meta["annotations"] = {
        **(meta.get("annotations") or {}),
        RUN_MODE_ANNOTATION: run_mode(job, resumed),
    }
    pod_meta["ownerReferences"] = [owner_reference(job)]
    pod_spec["hostname"] = name
    pod_spec["subdomain"] = job.name
    pod_spec["restartPolicy"] = "Never"
    if pod_spec.get("hostNetwork"):
        pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    container = own_item(pod_spec, "containers", mpi_container_index(pod_spec))
    pod_spec["volumes"] = [*(pod_spec.get("volumes") or []), _ssh_volume(job)]
    _mount(container, SSH_AUTH_VOLUME, job.spec.ssh.ssh_auth_mount_path or ROOT_SSH_PATH)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec}
    return pod, container


def new_worker_pod(
    job: MPIJob, index: int, *, resumed: bool = False, workload_api: bool = False
) -> Obj:
    """``workload_api``: the operator runs with ``--gang-scheduling=workload-api``; the
    pod joins the job's Workload API PodGroup unless the job names the t9k scheduler."""
    name = worker_name(job, index)
    pod, container = _pod(job, name, ReplicaType.WORKER, index, resumed, workload_api)
    sshd = [job.spec.ssh.sshd_path or "/usr/sbin/sshd", "-De"]
    _set_command(container, sshd, _override(job, ReplicaType.WORKER, resumed))
    return pod


def _strip_gpus(container: Obj) -> None:
    if not isinstance(container.get("resources"), dict):
        return
    resources = own_dict(container, "resources")
    for key in ("limits", "requests"):
        values = resources.get(key)
        if isinstance(values, dict) and GPU_RESOURCE in values:
            values = own_dict(resources, key)
            del values[GPU_RESOURCE]
            if not values:
                del resources[key]
    if not resources:
        del container["resources"]


def new_launcher_pod(
    job: MPIJob,
    *,
    resumed: bool = False,
    init_image: str = DEFAULT_INIT_IMAGE,
    workload_api: bool = False,
) -> Obj:
    """``workload_api`` as for :func:`new_worker_pod`."""
    name = launcher_name(job)
    pod, container = _pod(job, name, ReplicaType.LAUNCHER, 0, resumed, workload_api)
    pod_spec = pod["spec"]
    # Sidecars of the workers would keep the launcher pod from ever finishing.
    pod_spec["containers"] = [container]
    _strip_gpus(container)
    override = _override(job, ReplicaType.LAUNCHER, resumed)
    _set_command(container, mpirun_command(job), override)
    pod_spec["volumes"].append(
        {
            "name": CONFIG_VOLUME,
            "configMap": {
                "name": config_name(job),
                "items": [{"key": HOSTFILE_KEY, "path": HOSTFILE_KEY, "mode": 0o444}],
            },
        }
    )
    _mount(container, CONFIG_VOLUME, CONFIG_MOUNT_PATH)
    if override is None or not override.skip_init_container:
        init: Obj = {
            "name": INIT_CONTAINER_NAME,
            "image": init_image,
            "command": ["sh", "-c", WAIT_FOR_WORKERS_SCRIPT],
            "volumeMounts": [{"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH}],
        }
        pod_spec["initContainers"] = [*(pod_spec.get("initContainers") or []), init]
    return pod
