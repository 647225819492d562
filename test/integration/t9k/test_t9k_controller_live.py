"""T9k MPIJobs against the real API server: children, phases, status, clean-up, run modes."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from harness import record_pod_deletes
from t9k_harness import StartT9k, T9kCluster, conditions, t9k_job

from devcluster.polling import eventually
from mpi_operator.client import CONFIGMAPS, SECRETS, SERVICES, ApiError
from mpi_operator.controller.t9k import crd_installed
from mpi_operator.controller.t9k.context import T9K_POD_GROUPS

ALL = {"job-launcher", "job-worker-0", "job-worker-1"}
WORKERS = {"job-worker-0", "job-worker-1"}
#: The job's pods, and its workers among them, as a delete of the collection selects them.
JOB_PODS = "batch.tensorstack.dev/operator-name=mpi-operator,batch.tensorstack.dev/job-name=job"
WORKER_PODS = "batch.tensorstack.dev/replica-type=worker"


def agg(**counts: int) -> dict[str, int]:
    base = dict.fromkeys(
        ("creating", "pending", "running", "succeeded", "failed", "unknown", "deleted"), 0
    )
    return {**base, **counts}


def mpi_container(pod: dict[str, Any]) -> dict[str, Any]:
    return pod["spec"]["containers"][0]


def only_collections(deletes: list[dict[str, Any]], collection: dict[str, Any]) -> None:
    """The pods went in deletes of ``collection``, none by name. (A sync that ran before
    the cache showed the first delete sends the same one again; it finds nothing.)"""
    assert deletes, "no pod was deleted"
    assert all(d == collection for d in deletes), deletes


async def run_all(t9k: T9kCluster, names: set[str] = ALL) -> None:
    for name in sorted(names):
        await t9k.set_phase(name, "Running")


async def test_success_children_status_and_clean_up_all(
    t9k: T9kCluster, start_t9k: StartT9k
) -> None:
    deletes = record_pod_deletes(await start_t9k())
    await t9k.create(
        t9k_job(mca={"btl": "^openib"}, mpiHome="/opt/mpi", runPolicy={"cleanUpWorkers": True})
    )
    pods = await t9k.wait_pods(ALL)
    assert mpi_container(pods["job-launcher"])["command"] == [
        "/opt/mpi/bin/mpirun",
        "--prefix",
        "/opt/mpi",
        "--hostfile",
        "/etc/mpi/hostfile",
        "--mca",
        "btl",
        "^openib",
        "./pi",
        "100",
    ]
    assert [c["name"] for c in pods["job-launcher"]["spec"]["initContainers"]] == [
        "wait-for-workers"
    ]
    assert mpi_container(pods["job-worker-1"])["command"] == ["/usr/sbin/sshd", "-De"]
    service = await t9k.kube.get(SERVICES, t9k.ns, "job")
    assert service["spec"]["clusterIP"] == "None"
    config = await t9k.kube.get(CONFIGMAPS, t9k.ns, "job-config")
    assert config["data"]["hostfile"] == (
        f"job-worker-0.job.{t9k.ns}.svc slots=1\njob-worker-1.job.{t9k.ns}.svc slots=1\n"
    )
    secret = await t9k.kube.get(SECRETS, t9k.ns, "job-ssh")
    assert base64.b64decode(secret["data"]["ssh-publickey"]).startswith(b"ecdsa-sha2-nistp521 ")

    status = await t9k.wait_status(lambda s: s.get("aggregate") == agg(pending=3), "3 pending")
    assert status["phase"] == "Pending"
    assert conditions(status)["Initialized"] == "True"
    assert [(t["replicaType"], t["replicaIndex"]) for t in status["tasks"]] == [
        ("launcher", 0),
        ("worker", 0),
        ("worker", 1),
    ]

    await run_all(t9k)
    status = await t9k.wait_phase("Running")
    assert conditions(status)["Running"] == "True"
    status = await t9k.wait_status(lambda s: s.get("aggregate") == agg(running=3), "3 running")
    launcher_task = status["tasks"][0]
    assert launcher_task["replicas"][0]["name"] == "job-launcher"
    assert launcher_task["replicas"][0]["phase"] == "Running"
    assert launcher_task["replicas"][0]["containers"] == [
        {"name": "mpi-worker", "containerPhase": "Running"}
    ]

    await t9k.set_phase("job-launcher", "Succeeded", exit_code=0)
    status = await t9k.wait_phase("Succeeded")
    assert conditions(status)["Completed"] == "True"
    assert conditions(status)["Running"] == "False"
    await t9k.wait_pods({"job-launcher"})
    status = await t9k.wait_status(
        lambda s: s.get("aggregate") == agg(succeeded=1, deleted=2), "workers deleted"
    )
    # The two workers went in one delete of their collection.
    only_collections(
        deletes,
        {
            "namespace": t9k.ns,
            "label_selector": f"{JOB_PODS},{WORKER_PODS}",
            "field_selector": None,
        },
    )
    assert status["tasks"][0]["replicas"][0]["containers"] == [
        {"name": "mpi-worker", "containerPhase": "Terminated", "exitCode": 0}
    ]
    reasons = {e[1] for e in await t9k.events()}
    assert {"MPIJobInitialized", "MPIJobRunning", "MPIJobSucceeded"} <= reasons


async def test_failed_launcher_fails_the_job_and_none_keeps_workers(
    t9k: T9kCluster, start_t9k: StartT9k
) -> None:
    await start_t9k()
    await t9k.create(t9k_job(runPolicy={"cleanUpWorkers": "None"}))
    await t9k.wait_pods(ALL)
    await run_all(t9k)
    await t9k.wait_phase("Running")
    await t9k.set_phase("job-launcher", "Failed", exit_code=3)
    status = await t9k.wait_phase("Failed")
    assert conditions(status)["Failed"] == "True"
    assert "ReplicaFailure" not in conditions(status)
    assert status["tasks"][0]["replicas"][0]["containers"][0]["exitCode"] == 3
    assert ("Warning", "MPIJobFailed") in {e[:2] for e in await t9k.events()}
    # cleanUpWorkers none: the workers stay.
    assert set(await t9k.pods()) == ALL


async def test_worker_failure_fails_the_job_and_unfinished_cleans_only_live_workers(
    t9k: T9kCluster, start_t9k: StartT9k
) -> None:
    deletes = record_pod_deletes(await start_t9k())
    await t9k.create(t9k_job(workers=3, runPolicy={"cleanUpWorkers": "unfinished"}))
    await t9k.wait_pods({"job-launcher", "job-worker-0", "job-worker-1", "job-worker-2"})
    await run_all(t9k, {"job-launcher", "job-worker-0", "job-worker-2"})
    await t9k.set_phase("job-worker-1", "Failed", exit_code=1)
    status = await t9k.wait_phase("Failed")
    assert conditions(status)["ReplicaFailure"] == "True"
    # The failed worker stays, the running ones go; the launcher is not a worker.
    await t9k.wait_pods({"job-launcher", "job-worker-1"})
    await t9k.wait_status(
        lambda s: s.get("aggregate") == agg(running=1, failed=1, deleted=2),
        "aggregate after clean-up",
    )
    # One delete of the collection, whose field selector kept the failed worker.
    only_collections(
        deletes,
        {
            "namespace": t9k.ns,
            "label_selector": f"{JOB_PODS},{WORKER_PODS}",
            "field_selector": "status.phase!=Succeeded,status.phase!=Failed",
        },
    )


@pytest.mark.parametrize("value", [False, "none"])
async def test_clean_up_none_forms(t9k: T9kCluster, start_t9k: StartT9k, value: Any) -> None:
    await start_t9k()
    await t9k.create(t9k_job(workers=1, runPolicy={"cleanUpWorkers": value}))
    await t9k.wait_pods({"job-launcher", "job-worker-0"})
    await run_all(t9k, {"job-launcher", "job-worker-0"})
    await t9k.set_phase("job-launcher", "Succeeded", exit_code=0)
    await t9k.wait_phase("Succeeded")
    assert set(await t9k.pods()) == {"job-launcher", "job-worker-0"}


async def test_pause_deletes_pods_and_resume_recreates_them_with_resume_specs(
    t9k: T9kCluster, start_t9k: StartT9k
) -> None:
    deletes = record_pod_deletes(await start_t9k())
    pause = {
        "enable": False,
        "resumeSpecs": [
            {
                "type": "launcher",
                "skipInitContainer": True,
                "command": ["mpirun"],
                "args": ["--resume"],
            },
            {"type": "worker", "command": ["/usr/sbin/sshd", "-De", "-p", "2222"]},
        ],
    }
    await t9k.create(t9k_job(runMode={"pause": pause}))
    await t9k.wait_pods(ALL)
    await run_all(t9k)
    await t9k.wait_phase("Running")
    uids = {n: p["metadata"]["uid"] for n, p in (await t9k.pods()).items()}

    await t9k.patch_job({"spec": {"runMode": {"pause": {"enable": True}}}})
    status = await t9k.wait_phase("Paused")
    assert conditions(status)["Paused"] == "True"
    assert status["aggregate"] == agg(deleted=3)
    assert await t9k.pods() == {}
    only_collections(
        deletes, {"namespace": t9k.ns, "label_selector": JOB_PODS, "field_selector": None}
    )
    for resource, name in ((SERVICES, "job"), (CONFIGMAPS, "job-config"), (SECRETS, "job-ssh")):
        await t9k.kube.get(resource, t9k.ns, name)

    await t9k.patch_job({"spec": {"runMode": {"pause": {"enable": False}}}})
    status = await t9k.wait_phase("Resuming")
    assert conditions(status)["Paused"] == "False"
    pods = await t9k.wait_pods(ALL)
    assert all(p["metadata"]["uid"] != uids[n] for n, p in pods.items())
    launcher = mpi_container(pods["job-launcher"])
    assert (launcher["command"], launcher["args"]) == (["mpirun"], ["--resume"])
    assert "initContainers" not in pods["job-launcher"]["spec"]
    assert mpi_container(pods["job-worker-0"])["command"] == ["/usr/sbin/sshd", "-De", "-p", "2222"]
    await run_all(t9k)
    await t9k.wait_phase("Running")
    assert {"MPIJobPaused", "MPIJobResuming"} <= {e[1] for e in await t9k.events()}


async def test_debug_mode_keeps_the_job_up_through_failures(
    t9k: T9kCluster, start_t9k: StartT9k
) -> None:
    await start_t9k()
    await t9k.create(t9k_job(runMode={"debug": {"enabled": True}}))
    pods = await t9k.wait_pods(ALL)
    assert mpi_container(pods["job-launcher"])["command"] == ["sleep", "inf"]
    assert mpi_container(pods["job-worker-0"])["command"] == ["/usr/sbin/sshd", "-De"]
    status = await t9k.wait_phase("Debugging")
    assert conditions(status)["Debugging"] == "True"
    await run_all(t9k)
    await t9k.set_phase("job-worker-0", "Failed", exit_code=1)
    await t9k.wait_status(lambda s: s.get("aggregate") == agg(running=2, failed=1), "worker failed")
    status = await t9k.status()
    assert status["phase"] == "Debugging"
    assert "Failed" not in conditions(status)


async def test_t9k_scheduler_pod_group_and_pod_labels(t9k: T9kCluster, start_t9k: StartT9k) -> None:
    await start_t9k()
    await t9k.create(t9k_job(scheduler={"t9kScheduler": {"queue": "gpu", "priority": 7}}))
    pods = await t9k.wait_pods(ALL)
    group = await t9k.kube.get(T9K_POD_GROUPS, t9k.ns, "job")
    assert group["spec"] == {"minMember": 3, "queue": "gpu", "priority": 7}
    assert group["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"
    for pod in pods.values():
        assert pod["spec"]["schedulerName"] == "t9k-scheduler"
        labels = pod["metadata"]["labels"]
        assert labels["scheduler.tensorstack.dev/group-name"] == "job"
        assert labels["scheduler.tensorstack.dev/queue"] == "gpu"


async def test_invalid_job_gets_a_validation_event_and_no_pods(
    t9k: T9kCluster, start_t9k: StartT9k
) -> None:
    await start_t9k()
    await t9k.create(t9k_job(runPolicy={"cleanUpWorkers": "sometimes"}))

    async def reported() -> bool:
        return any(e[1] == "ValidationError" for e in await t9k.events())

    await eventually(reported, within=20, what="ValidationError event")
    assert await t9k.pods() == {}


async def test_crd_rejects_bad_priority(t9k: T9kCluster, t9k_crds: None) -> None:
    with pytest.raises(ApiError) as info:
        await t9k.create(t9k_job(scheduler={"t9kScheduler": {"queue": "q", "priority": 101}}))
    assert info.value.status == 422


async def test_crd_installed_detects_the_t9k_crd(kube: Any, t9k_crds: None) -> None:
    assert await crd_installed(kube)


async def test_scale_down_removes_surplus_workers_and_rewrites_the_hostfile(
    t9k: T9kCluster, start_t9k: StartT9k
) -> None:
    await start_t9k()
    await t9k.create(t9k_job(workers=3))
    await t9k.wait_pods({"job-launcher", "job-worker-0", "job-worker-1", "job-worker-2"})
    await t9k.patch_job({"spec": {"worker": {"replicas": 1}}})
    await t9k.wait_pods({"job-launcher", "job-worker-0"})

    async def hostfile_rewritten() -> bool:
        config = await t9k.kube.get(CONFIGMAPS, t9k.ns, "job-config")
        return bool(config["data"]["hostfile"] == f"job-worker-0.job.{t9k.ns}.svc slots=1\n")

    await eventually(hostfile_rewritten, within=20, what="hostfile with one worker")
    await t9k.wait_status(lambda s: s.get("aggregate") == agg(pending=2), "two pending pods")


async def test_switching_debug_mode_replaces_the_pods(t9k: T9kCluster, start_t9k: StartT9k) -> None:
    await start_t9k()
    await t9k.create(t9k_job(workers=1))
    pods = await t9k.wait_pods({"job-launcher", "job-worker-0"})
    assert mpi_container(pods["job-launcher"])["command"][0] == "mpirun"
    await t9k.patch_job({"spec": {"runMode": {"debug": {"enabled": True}}}})

    async def launcher_sleeps() -> bool:
        launcher = (await t9k.pods()).get("job-launcher")
        return launcher is not None and mpi_container(launcher)["command"] == ["sleep", "inf"]

    await eventually(launcher_sleeps, within=20, what="debug launcher")
    await t9k.wait_phase("Debugging")
    await t9k.patch_job({"spec": {"runMode": {"debug": {"enabled": False}}}})

    async def launcher_runs_mpirun() -> bool:
        launcher = (await t9k.pods()).get("job-launcher")
        return launcher is not None and mpi_container(launcher)["command"][0] == "mpirun"

    await eventually(launcher_runs_mpirun, within=20, what="normal launcher again")
    await t9k.wait_phase("Pending")
    status = await t9k.status()
    assert conditions(status)["Debugging"] == "False"
