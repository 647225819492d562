"""Names, labels and pod decorations shared by several builders."""

from __future__ import annotations

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import (
    API_VERSION,
    JOB_NAME_LABEL,
    JOB_ROLE_LABEL,
    KIND,
    OPERATOR_NAME,
    OPERATOR_NAME_LABEL,
    MPIJob,
    ReplicaSpec,
    RestartPolicy,
)
from mpi_operator.builders.meta import controller_reference, object_meta
from mpi_operator.builders.ssh import ROOT_SSH_PATH, SSH_AUTH_VOLUME, ssh_secret_volume

LAUNCHER = "launcher"
WORKER = "worker"
LAUNCHER_SUFFIX = "-launcher"
WORKER_SUFFIX = "-worker"
CONFIG_SUFFIX = "-config"
SSH_AUTH_SECRET_SUFFIX = "-ssh"

CONFIG_VOLUME_NAME = "mpi-job-config"
CONFIG_MOUNT_PATH = "/etc/mpi"
HOSTFILE_NAME = "hostfile"
DISCOVER_HOSTS_SCRIPT_NAME = "discover_hosts.sh"


def controller_owner_reference(job: MPIJob) -> Obj:
    return controller_reference(API_VERSION, KIND, job.name, job.uid)


def child_metadata(job: MPIJob, name: str) -> Obj:
    """Metadata of the Service, ConfigMap, Secret and launcher Job."""
    return object_meta(name, job.namespace, {"app": job.name}, controller_owner_reference(job))


def default_labels(job_name: str, role: str) -> dict[str, str]:
    return {
        OPERATOR_NAME_LABEL: OPERATOR_NAME,
        JOB_NAME_LABEL: job_name,
        JOB_ROLE_LABEL: role,
    }


def worker_selector(job_name: str) -> str:
    """The worker pods' label selector in its string form, as the scale subresource
    reads it from the status (a HorizontalPodAutoscaler needs it)."""
    labels = default_labels(job_name, WORKER)
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def worker_name(job: MPIJob, index: int) -> str:
    return f"{job.name}{WORKER_SUFFIX}-{index}"


def worker_names(job_name: str, replicas: int) -> list[str]:
    """``worker_name`` of indexes 0 to ``replicas - 1`` of the job named ``job_name``."""
    prefix = f"{job_name}{WORKER_SUFFIX}-"
    return [f"{prefix}{i}" for i in range(replicas)]


def launcher_name(job: MPIJob) -> str:
    return job.name + LAUNCHER_SUFFIX


def run_launcher_as_worker(job: MPIJob) -> bool:
    return bool(job.spec.run_launcher_as_worker)


def is_suspended(job: MPIJob) -> bool:
    return bool(job.spec.run_policy.suspend)


def pod_restart_policy(spec: ReplicaSpec) -> str:
    """The pod restartPolicy for a replica: ExitCode is handled by us, so pods use Never."""
    if spec.restart_policy == RestartPolicy.EXIT_CODE:
        return RestartPolicy.NEVER.value
    return spec.restart_policy or ""


def host_domain(pod_name: str, job: MPIJob, namespace: str, cluster_domain: str) -> str:
    return pod_name + domain_suffix(job.name, namespace, cluster_domain)


def domain_suffix(job_name: str, namespace: str, cluster_domain: str) -> str:
    """What :func:`host_domain` appends to a pod's name."""
    suffix = f".{job_name}.{namespace}.svc"
    return f"{suffix}.{cluster_domain}" if cluster_domain else suffix


def set_pod_identity(pod_spec: Obj, job: MPIJob, hostname: str) -> None:
    """Hostname and subdomain that make the pod resolvable through the job's Service."""
    pod_spec["hostname"] = hostname
    pod_spec["subdomain"] = job.name
    if pod_spec.get("hostNetwork"):
        # Lets pods on the host network resolve the workers' short names.
        pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"


def set_restart_policy(pod_spec: Obj, spec: ReplicaSpec) -> None:
    policy = pod_restart_policy(spec)
    if policy:
        pod_spec["restartPolicy"] = policy
    else:
        pod_spec.pop("restartPolicy", None)


def main_container(pod_spec: Obj) -> Obj:
    container: Obj = pod_spec["containers"][0]
    return container


def append_env(container: Obj, env: list[Obj]) -> None:
    container["env"] = [*(container.get("env") or []), *env]


def setup_ssh(pod_spec: Obj, job: MPIJob) -> None:
    """Mounts the job's SSH key Secret into the main container."""
    mount_path = job.spec.ssh_auth_mount_path or ROOT_SSH_PATH
    volume = ssh_secret_volume(job.name + SSH_AUTH_SECRET_SUFFIX, mount_path)
    pod_spec["volumes"] = [*(pod_spec.get("volumes") or []), volume]
    container = main_container(pod_spec)
    container["volumeMounts"] = [
        *(container.get("volumeMounts") or []),
        {"name": SSH_AUTH_VOLUME, "mountPath": mount_path},
    ]
