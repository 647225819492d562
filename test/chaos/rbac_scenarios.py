"""The RBAC test's scenarios: what each sets up before the operator starts and how it
drives the operator to its goal, which scenario needs which granted right, and a run
of one group of scenarios under one operator process."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from chaos_support import list_items
from examples_support import VolcanoStandIn
from failure_support import oom_job
from rbac_support import (
    COSCHEDULER,
    OPERATOR_LABEL,
    STAND_IN,
    Binder,
    Rbac,
    Run,
    Triple,
    create,
    get,
    labelled,
    merge_patch,
    mpijob_path,
    parsed,
    succeeded,
    workers_exist,
    workers_gone,
)

from devcluster import LocalCluster
from devcluster.sample_jobs import pi_mpijob
from mpi_operator.api.scheduling import GangKind, GangScheduling
from mpi_operator.builders.kubeflow.config import new_config_map
from mpi_operator.builders.kubeflow.launcher import new_launcher_job
from mpi_operator.builders.kubeflow.podgroup import new_pod_group
from mpi_operator.builders.kubeflow.secret import new_ssh_auth_secret
from mpi_operator.builders.kubeflow.service import new_job_service
from mpi_operator.builders.kubeflow.worker import new_worker

Drive = Callable[[], None]


def pi(run: Run) -> Drive:
    ns = run.namespace("rbac-pi")
    create(run.cluster, mpijob_path(ns), pi_mpijob("pi", workers=2))

    def drive() -> None:
        run.wait(succeeded(run, ns, "pi"), "pi Succeeded")
        run.wait(workers_gone(run, ns, "pi"), "pi's workers deleted (cleanPodPolicy)")

    return drive


def suspend(run: Run) -> Drive:
    """The launcher Job is made beforehand, as the operator would, but managed by
    nobody (``spec.managedBy``) and given a startTime, so that the Job controller
    never clears it: resuming must clear it through jobs/status, every time."""
    c, ns = run.cluster, run.namespace("rbac-suspend")
    obj = create(c, mpijob_path(ns), pi_mpijob("pause", workers=1, launcher_exit=None))
    launcher = new_launcher_job(parsed(obj)).job
    launcher["spec"]["managedBy"] = STAND_IN
    path = f"/apis/batch/v1/namespaces/{ns}/jobs"
    create(c, path, launcher)
    path += "/pause-launcher"
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    merge_patch(c, f"{path}/status", {"status": {"startTime": started}})

    def launcher_suspended(value: bool) -> Callable[[], bool]:
        def check() -> bool:
            job = get(c, path) or {}
            return job.get("spec", {}).get("suspend") is value

        return check

    def drive() -> None:
        # Its one worker is deleted by name on suspension (pods delete; the workers of
        # a finished job go as one collection).
        run.wait(workers_exist(run, ns, "pause"), "pause's worker created")
        merge_patch(c, mpijob_path(ns, "pause"), {"spec": {"runPolicy": {"suspend": True}}})
        run.wait(launcher_suspended(True), "the launcher Job suspended")
        run.wait(workers_gone(run, ns, "pause"), "pause's worker deleted")
        merge_patch(c, mpijob_path(ns, "pause"), {"spec": {"runPolicy": {"suspend": False}}})
        run.wait(launcher_suspended(False), "the launcher Job resumed")
        job = get(c, path) or {}
        assert not job.get("status", {}).get("startTime"), job.get("status")

    return drive


def restart(run: Run) -> Drive:
    """A worker OOMKilled on its first run: the failure policy's RestartJob deletes the
    first attempt's launcher Job (jobs delete) and workers, and the second attempt
    succeeds."""
    ns = run.namespace("rbac-restart")
    create(
        run.cluster, mpijob_path(ns), oom_job("restart", True, "Running", launcher_runs_for="3s")
    )

    def restarted() -> bool:
        job = get(run.cluster, mpijob_path(ns, "restart")) or {}
        return int((job.get("status") or {}).get("restartCount") or 0) >= 1

    def drive() -> None:
        run.wait(restarted, "restart restarted by its failure policy")
        run.wait(succeeded(run, ns, "restart"), "restart Succeeded after its restart")

    return drive


def ttl(run: Run) -> Drive:
    """ttlSecondsAfterFinishedPolicy MPIJob: the finished MPIJob itself is deleted
    (mpijobs delete)."""
    ns = run.namespace("rbac-ttl")
    job = pi_mpijob("ttl", workers=1, complete_after="1s")
    job["spec"]["runPolicy"].update(
        ttlSecondsAfterFinished=0, ttlSecondsAfterFinishedPolicy="MPIJob"
    )
    create(run.cluster, mpijob_path(ns), job)

    def drive() -> None:
        run.wait(lambda: get(run.cluster, mpijob_path(ns, "ttl")) is None, "ttl's MPIJob deleted")

    return drive


def adopt(run: Run) -> Drive:
    c, ns = run.cluster, run.namespace("rbac-adopt")
    obj = create(c, mpijob_path(ns), pi_mpijob("adopt", workers=1, launcher_exit=None))
    job = parsed(obj)
    service = new_job_service(job)
    service["spec"]["selector"] = {"drifted": "yes"}
    config = new_config_map(job, 1)
    config["data"] = {"hostfile": "stale\n"}
    secret = new_ssh_auth_secret(job)
    del secret["data"]["ssh-publickey"]
    launcher, worker = new_launcher_job(job).job, new_worker(job, 0)
    for child in (service, config, secret, launcher, worker):
        # As an older operator made them: invisible to the label-filtered caches.
        (child["metadata"].get("labels") or {}).pop(OPERATOR_LABEL, None)
    base = f"/api/v1/namespaces/{ns}"
    create(c, f"{base}/services", service)
    create(c, f"{base}/configmaps", config)
    create(c, f"{base}/secrets", secret)
    create(c, f"/apis/batch/v1/namespaces/{ns}/jobs", launcher)
    create(c, f"{base}/pods", worker)

    def done() -> bool:
        svc = get(c, f"{base}/services/adopt")
        cm = get(c, f"{base}/configmaps/adopt-config")
        sec = get(c, f"{base}/secrets/adopt-ssh")
        launcher = get(c, f"/apis/batch/v1/namespaces/{ns}/jobs/adopt-launcher")
        return (
            all(map(labelled, (svc, cm, sec, launcher)))
            and svc is not None
            and "drifted" not in svc["spec"]["selector"]
            and cm is not None
            and cm["data"].get("hostfile") != "stale\n"
            and sec is not None
            and "ssh-publickey" in sec["data"]
        )

    def drive() -> None:
        run.wait(done, "the children adopted and repaired")

    return drive


def clash(run: Run) -> Drive:
    c, ns = run.cluster, run.namespace("rbac-clash")
    foreign = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "clash"},
        "spec": {"clusterIP": "None", "selector": {"app": "someone-else"}},
    }
    create(c, f"/api/v1/namespaces/{ns}/services", foreign)
    create(c, mpijob_path(ns), pi_mpijob("clash", workers=1))

    def repeated() -> bool:
        events = list_items(c, f"/api/v1/namespaces/{ns}/events")
        return any(
            e.get("reason") == "ErrResourceExists" and int(e.get("count") or 1) >= 2 for e in events
        )

    def drive() -> None:
        run.wait(repeated, "a repeated ErrResourceExists event (count >= 2)")

    return drive


Obj = dict[str, Any]


def _minimum(gang: GangScheduling, group: Obj) -> Obj:
    """The object holding the PodGroup's minimum and its key."""
    if gang.kind is GangKind.WORKLOAD_API:
        return dict(group["spec"]["schedulingPolicy"]["gang"])
    return {"minMember": group["spec"]["minMember"]}


def _set_minimum(gang: GangScheduling, group: Obj, value: int) -> None:
    if gang.kind is GangKind.WORKLOAD_API:
        group["spec"]["schedulingPolicy"]["gang"]["minCount"] = value
    else:
        group["spec"]["minMember"] = value


def _binder(c: LocalCluster, ns: str, gang: GangScheduling) -> Callable[[], None]:
    """Who places the gang's pods: stand-ins, or the real kube-scheduler (Workload API)."""
    if gang.kind is GangKind.VOLCANO:
        return VolcanoStandIn(c, ns)
    if gang.kind is GangKind.WORKLOAD_API:
        return lambda: None
    return Binder(c, ns, COSCHEDULER)


def _gang(run: Run, gang: GangScheduling, plural_path: str, prefix: str) -> Drive:
    c, ns = run.cluster, run.namespace(prefix)
    create(c, mpijob_path(ns), pi_mpijob("gang", workers=2))
    groups = plural_path.format(ns=ns)
    # A drifted PodGroup is repaired (update), except the Workload API's: set at creation.
    drift = gang.kind is not GangKind.WORKLOAD_API
    want: Obj = {}
    if drift:
        obj = create(c, mpijob_path(ns), pi_mpijob("drift", workers=1, launcher_exit=None))
        group = new_pod_group(parsed(obj), gang, {})
        want = _minimum(gang, group)
        _set_minimum(gang, group, 99)
        create(c, groups, group)
    binder = _binder(c, ns, gang)

    def drive() -> None:
        def gang_done() -> bool:
            binder()
            return succeeded(run, ns, "gang")()

        run.wait(gang_done, "the gang job Succeeded")

        def group_deleted() -> bool:
            # A Workload API PodGroup may wait for its pods (the launcher's stays): the
            # operator's delete is what counts here.
            pg = get(c, f"{groups}/gang")
            return pg is None or bool(pg["metadata"].get("deletionTimestamp"))

        run.wait(group_deleted, "the finished job's PodGroup deleted")

        def repaired() -> bool:
            pg = get(c, f"{groups}/drift")
            return pg is not None and _minimum(gang, pg) == want

        if drift:
            run.wait(repaired, "the drifted PodGroup repaired")

    return drive


def volcano(run: Run) -> Drive:
    return _gang(
        run,
        GangScheduling.volcano(),
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups",
        "rbac-volcano",
    )


def coscheduling(run: Run) -> Drive:
    return _gang(
        run,
        GangScheduling.scheduler_plugins(COSCHEDULER),
        "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups",
        "rbac-cosched",
    )


def workload(run: Run) -> Drive:
    return _gang(
        run,
        GangScheduling.workload_api(),
        "/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups",
        "rbac-workload",
    )


Scenario = Callable[[Run], Drive]
#: The children the ``adopt`` scenario finds drifted and updates.
CHILDREN = ("services", "configmaps", "secrets")

#: The operator's flags for each group of scenarios (one process a group).
GROUPS: dict[str, tuple[tuple[str, ...], list[Scenario]]] = {
    "plain": ((), [pi, suspend, adopt, clash, restart, ttl]),
    "volcano": (("--gang-scheduling=volcano",), [volcano]),
    "coscheduling": ((f"--gang-scheduling={COSCHEDULER}",), [coscheduling]),
    "workload": (("--gang-scheduling=workload-api",), [workload]),
}


def scenario_for(t: Triple) -> tuple[str, Scenario]:
    """The one scenario that needs ``t`` (the cheapest, when several do)."""
    group, resource, verb = t
    if group == "scheduling.volcano.sh" or resource == "priorityclasses":
        return "volcano", volcano
    if group == "scheduling.x-k8s.io":
        return "coscheduling", coscheduling
    if group == "scheduling.k8s.io" and resource == "podgroups":
        return "workload", workload
    if resource == "events" and verb == "patch":
        return "plain", clash
    if resource == "jobs" and verb == "delete":
        return "plain", restart
    if resource == "mpijobs" and verb == "delete":
        return "plain", ttl
    if (resource in ("jobs", "jobs/status") and verb == "update") or (
        resource == "pods" and verb == "delete"
    ):
        return "plain", suspend
    if verb in ("get", "patch") or (verb == "update" and resource in CHILDREN):
        return "plain", adopt
    return "plain", pi


def run_group(rbac: Rbac, name: str, scenarios: list[Scenario], graceful: bool) -> Run:
    flags = GROUPS[name][0]
    run = Run(rbac, flags, name)
    try:
        drives = [s(run) for s in scenarios]
        run.start()
        for drive in drives:
            drive()
    except (AssertionError, TimeoutError):
        print(f"--- operator of {name} ---\n{run.log_tail()}")
        raise
    finally:
        run.stop(graceful)
    return run
