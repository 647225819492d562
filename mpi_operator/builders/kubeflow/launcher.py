"""The launcher: a batch/v1 Job ``<job>-launcher`` that runs mpirun."""

from __future__ import annotations

from dataclasses import dataclass, field

from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.api.v2beta1 import (
    REPLICA_INDEX_LABEL,
    MPIImplementation,
    MPIJob,
    ReplicaType,
    TTLPolicy,
)
from mpi_operator.builders.kubeflow.common import (
    CONFIG_MOUNT_PATH,
    CONFIG_SUFFIX,
    CONFIG_VOLUME_NAME,
    DISCOVER_HOSTS_SCRIPT_NAME,
    HOSTFILE_NAME,
    LAUNCHER,
    append_env,
    child_metadata,
    controller_owner_reference,
    default_labels,
    is_suspended,
    launcher_name,
    main_container,
    run_launcher_as_worker,
    set_pod_identity,
    set_restart_policy,
    setup_ssh,
)
from mpi_operator.builders.kubeflow.podgroup import decorate_pod_template
from mpi_operator.builders.meta import deep_copy

POD_TEMPLATE_RESTART_POLICY_REASON = "SetPodTemplateRestartPolicy"
POD_TEMPLATE_RESTART_POLICY_MESSAGE = (
    "Restart policy in pod template overridden by restart policy in replica spec"
)

_HOSTFILE_PATH = f"{CONFIG_MOUNT_PATH}/{HOSTFILE_NAME}"
_SSH_RETRY_ARGS = "-o ConnectionAttempts=10"


def _implementation_env(implementation: str, slots: int) -> list[Obj]:
    if implementation == MPIImplementation.OPEN_MPI:
        return [
            # Lets mpirun reach the workers through the job's Service.
            {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
            {"name": "OMPI_MCA_orte_default_hostfile", "value": _HOSTFILE_PATH},
            {"name": "OMPI_MCA_plm_rsh_args", "value": _SSH_RETRY_ARGS},
            {"name": "OMPI_MCA_orte_set_default_slots", "value": str(slots)},
            # The same four for Open MPI 5, whose mpirun is PRRTE's prterun: it reads
            # them only under PRRTE's names. Its own translation of OMPI_MCA_orte_* and
            # OMPI_MCA_plm_rsh_* (PRRTE 3.0.3 on) runs only for `--personality ompi`,
            # not when mpirun starts it with PRTE_MCA_schizo_proxy=ompi, so without these
            # every rank runs on the launcher (a bug fix; the reference sets only the above).
            {"name": "PRTE_MCA_prte_keep_fqdn_hostnames", "value": "true"},
            {"name": "PRTE_MCA_prte_default_hostfile", "value": _HOSTFILE_PATH},
            {"name": "PRTE_MCA_plm_ssh_args", "value": _SSH_RETRY_ARGS},
            {"name": "PRTE_MCA_prte_set_default_slots", "value": str(slots)},
            # ORTE resolved a hostfile name to tell whether it is the launcher's own
            # (runLauncherAsWorker); PRRTE compares names only unless told to resolve, and
            # the launcher's full name is not its host name: it would ssh to itself.
            {"name": "PRTE_MCA_prte_do_not_resolve", "value": "false"},
        ]
    if implementation == MPIImplementation.INTEL:
        return [
            {"name": "I_MPI_HYDRA_HOST_FILE", "value": _HOSTFILE_PATH},
            {"name": "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "value": _SSH_RETRY_ARGS},
            {"name": "I_MPI_PERHOST", "value": str(slots)},
        ]
    if implementation == MPIImplementation.MPICH:
        return [
            {"name": "HYDRA_HOST_FILE", "value": _HOSTFILE_PATH},
            {"name": "HYDRA_LAUNCH_EXTRA_ARGS", "value": _SSH_RETRY_ARGS},
        ]
    return []


# Empty values stop the NVIDIA runtime from handing GPUs to a launcher that
# only runs mpirun, whatever the node or image defaults say.
_NVIDIA_DISABLE_ENV: list[Obj] = [
    {"name": "NVIDIA_VISIBLE_DEVICES"},
    {"name": "NVIDIA_DRIVER_CAPABILITIES"},
]


@dataclass(frozen=True, slots=True)
class BuildWarning:
    """Something the controller should report as a Warning event on the MPIJob."""

    reason: str
    message: str


@dataclass(slots=True)
class LauncherPodTemplate:
    template: Obj
    warnings: list[BuildWarning] = field(default_factory=list)


@dataclass(slots=True)
class LauncherJob:
    job: Obj
    warnings: list[BuildWarning] = field(default_factory=list)


def new_launcher_pod_template(
    job: MPIJob, gang: GangScheduling | None = None
) -> LauncherPodTemplate:
    spec = job.replica_spec(ReplicaType.LAUNCHER)
    if spec is None:
        raise ValueError(f"MPIJob {job.namespace}/{job.name} has no Launcher replica spec")
    warnings: list[BuildWarning] = []
    template = deep_copy(spec.template)
    metadata = metadata_of(template)
    labels = {**(metadata.get("labels") or {}), **default_labels(job.name, LAUNCHER)}
    template["metadata"] = {**metadata, "labels": labels}
    template.setdefault("spec", {})
    if gang is not None:
        template = decorate_pod_template(template, job.name, gang)
    if run_launcher_as_worker(job):
        template["metadata"]["labels"][REPLICA_INDEX_LABEL] = "0"
    pod_spec: Obj = template["spec"]
    set_pod_identity(pod_spec, job, launcher_name(job))
    container = main_container(pod_spec)
    env: list[Obj] = [{"name": "K_MPI_JOB_ROLE", "value": LAUNCHER}]
    env += _implementation_env(job.spec.mpi_implementation or "", job.spec.slots_per_worker or 0)
    if not run_launcher_as_worker(job):
        env += deep_copy(_NVIDIA_DISABLE_ENV)
    append_env(container, env)
    setup_ssh(pod_spec, job)
    if pod_spec.get("restartPolicy"):
        warnings.append(
            BuildWarning(POD_TEMPLATE_RESTART_POLICY_REASON, POD_TEMPLATE_RESTART_POLICY_MESSAGE)
        )
    set_restart_policy(pod_spec, spec)
    pod_spec["volumes"] = [
        *(pod_spec.get("volumes") or []),
        {
            "name": CONFIG_VOLUME_NAME,
            "configMap": {
                "name": job.name + CONFIG_SUFFIX,
                "items": [
                    {"key": HOSTFILE_NAME, "path": HOSTFILE_NAME, "mode": 0o444},
                    {
                        "key": DISCOVER_HOSTS_SCRIPT_NAME,
                        "path": DISCOVER_HOSTS_SCRIPT_NAME,
                        "mode": 0o555,
                    },
                ],
            },
        },
    ]
    container["volumeMounts"] = [
        *(container.get("volumeMounts") or []),
        {"name": CONFIG_VOLUME_NAME, "mountPath": CONFIG_MOUNT_PATH},
    ]
    meta = template["metadata"]
    template_meta: Obj = {"labels": meta["labels"]}
    if meta.get("annotations"):
        template_meta["annotations"] = meta["annotations"]
    template_meta["ownerReferences"] = [controller_owner_reference(job)]
    return LauncherPodTemplate({"metadata": template_meta, "spec": pod_spec}, warnings)


def new_launcher_job(job: MPIJob, gang: GangScheduling | None = None) -> LauncherJob:
    pod_template = new_launcher_pod_template(job, gang)
    run_policy = job.spec.run_policy
    spec: Obj = {}
    # Under the MPIJob policy (ours) the TTL deletes the MPIJob, and the launcher Job
    # with it: a launcher Job gone on its own would be made again, and the job rerun.
    own_ttl = run_policy.ttl_seconds_after_finished_policy != TTLPolicy.MPIJOB
    if run_policy.ttl_seconds_after_finished is not None and own_ttl:
        spec["ttlSecondsAfterFinished"] = run_policy.ttl_seconds_after_finished
    if run_policy.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = run_policy.active_deadline_seconds
    if run_policy.backoff_limit is not None:
        spec["backoffLimit"] = run_policy.backoff_limit
    spec["template"] = pod_template.template
    # Replace a launcher pod only once it has fully terminated, never while
    # it is still terminating (kubernetes/kubernetes#115844).
    spec["podReplacementPolicy"] = "Failed"
    if is_suspended(job):
        spec["suspend"] = True
    obj: Obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": child_metadata(job, launcher_name(job)),
        "spec": spec,
    }
    return LauncherJob(obj, pod_template.warnings)


def sync_launcher_scheduling_directives(launcher: Obj, desired_template: Obj) -> Obj:
    """A copy of the launcher Job whose mutable scheduling directives match the desired template.

    Labels and annotations are merged (desired wins); nodeSelector,
    tolerations and schedulingGates are replaced, absent ones removed.
    """
    updated: Obj = deep_copy(launcher)
    template = updated.setdefault("spec", {}).setdefault("template", {})
    meta = template.setdefault("metadata", {})
    desired_meta = metadata_of(desired_template)
    for key in ("labels", "annotations"):
        merged = {**(meta.get(key) or {}), **(desired_meta.get(key) or {})}
        if merged:
            meta[key] = merged
        else:
            meta.pop(key, None)
    pod_spec = template.setdefault("spec", {})
    desired_spec = desired_template.get("spec") or {}
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        if desired_spec.get(key):
            pod_spec[key] = deep_copy(desired_spec[key])
        else:
            pod_spec.pop(key, None)
    return updated
