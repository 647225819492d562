"""T9k ``status.tasks`` and the messages that name pods stay bounded: a job of up to 100
pod slots lists every slot as before; a bigger one lists only the pods that are not
Running (failed and unknown first), at most 100 and 128 KiB of them, and ``aggregate``
counts them all. Before, one entry per pod made the status 209 KB at 1,000 workers and
past 1 MiB at 5,000; past about 7,000 it could never be written."""

from __future__ import annotations

import json
import time
from typing import Any

from test_t9k_status import NOW, pod

from mpi_operator.api.limits import MAX_WORKER_REPLICAS
from mpi_operator.api.t9k import MPIJob, parse, set_defaults
from mpi_operator.api.t9k.validation import config_shape
from mpi_operator.controller.t9k.status import next_status
from mpi_operator.controller.t9k.tasks import MAX_TASKS, TASKS_BYTES, progress_only

#: What the API server takes at most in a request (etcd's limit is 1.5 MiB; we keep far
#: under it): every status the operator writes stays under this.
STATUS_BUDGET = 256 * 1024

Obj = dict[str, Any]


def big(workers: int, name: str = "pi") -> MPIJob:
    obj = _obj(name)
    obj["spec"]["worker"]["replicas"] = workers
    return set_defaults(parse(obj))


def all_pods(job: MPIJob, phase: str, **phases: str) -> dict[str, Obj]:
    """Every slot's pod in ``phase``, but those named in ``phases``."""
    names = [f"{job.name}-launcher"] + [
        f"{job.name}-worker-{i}" for i in range(job.worker_replicas)
    ]
    return {n: pod(n, phases.get(n.replace("-", "_"), phase)) for n in names}


def written(job: MPIJob, pods: dict[str, Obj]) -> Obj:
    update = next_status(job, pods, NOW, pods_created=True)
    status: Obj = update.status.model_dump(by_alias=True, exclude_unset=True, mode="json")
    return status


def listed(status: Obj) -> list[tuple[str, int]]:
    return [(t["replicaType"], t["replicaIndex"]) for t in status["tasks"]]


def size(status: Obj) -> int:
    return len(json.dumps(status, separators=(",", ":")))


def test_a_job_of_up_to_100_slots_lists_every_slot_running_or_not() -> None:
    job = big(MAX_TASKS - 1)
    status = written(job, all_pods(job, "Running"))
    assert len(status["tasks"]) == MAX_TASKS
    assert listed(status)[:2] == [("launcher", 0), ("worker", 0)]
    assert all(t["replicas"][0]["phase"] == "Running" for t in status["tasks"])


def test_a_bigger_job_lists_only_the_pods_that_do_not_run() -> None:
    job = big(1300)
    pods = all_pods(job, "Running", pi_worker_7="Pending", pi_worker_1200="Pending")
    del pods["pi-worker-900"]  # being created
    status = written(job, pods)
    assert listed(status) == [("worker", 7), ("worker", 900), ("worker", 1200)]
    assert status["tasks"][1]["replicas"] == []
    assert status["aggregate"]["running"] == 1298
    assert status["aggregate"]["pending"] == 2
    assert status["aggregate"]["creating"] == 1
    job.status = None
    assert written(job, all_pods(job, "Running"))["tasks"] == []


def test_at_most_100_tasks_failed_and_unknown_pods_first_in_slot_order() -> None:
    job = big(1300)
    pods = all_pods(job, "Pending", pi_worker_1299="Failed", pi_worker_640="Unknown")
    status = written(job, pods)
    assert len(status["tasks"]) == MAX_TASKS
    assert listed(status)[0] == ("launcher", 0)
    assert listed(status)[-2:] == [("worker", 640), ("worker", 1299)]
    assert listed(status) == sorted(listed(status), key=lambda t: (t[0] != "launcher", t[1]))
    assert status["aggregate"]["pending"] == 1299
    assert status["phase"] == "Failed"


def test_the_failed_workers_message_names_ten_and_counts_the_rest() -> None:
    job = big(30)
    failed = {f"pi_worker_{i}": "Failed" for i in range(15)}
    status = written(job, all_pods(job, "Running", **failed))
    (condition,) = [c for c in status["conditions"] if c["type"] == "Failed"]
    named = ", ".join(f"pi-worker-{i}" for i in range(10))
    assert condition["message"] == f"MPIJob ns/pi failed: worker(s) {named} and 5 more failed."


def test_a_few_failed_workers_are_all_named_as_before() -> None:
    job = big(3)
    status = written(job, all_pods(job, "Running", pi_worker_0="Failed", pi_worker_2="Failed"))
    (condition,) = [c for c in status["conditions"] if c["type"] == "Failed"]
    assert condition["message"] == "MPIJob ns/pi failed: worker(s) pi-worker-0, pi-worker-2 failed."


def test_tasks_stay_under_their_byte_budget_whatever_the_pods_containers() -> None:
    job = big(200)
    pods = all_pods(job, "Pending")
    many = [{"name": f"sidecar-{i:04d}", "state": {"waiting": {}}} for i in range(300)]
    for p in pods.values():
        p["status"]["containerStatuses"] = many
    status = written(job, pods)
    tasks = json.dumps(status["tasks"], separators=(",", ":"))
    assert 0 < len(status["tasks"]) < MAX_TASKS
    assert len(tasks) <= TASKS_BYTES


def _largest_accepted(name: str) -> int:
    return min(config_shape(big(1, name)).largest_fitting(), MAX_WORKER_REPLICAS)


def _obj(name: str) -> Obj:
    template = {"spec": {"containers": [{"name": "c"}]}}
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": "u"},
        "spec": {"worker": {"replicas": 1, "cmd": ["x"], "template": template}},
    }


def test_every_status_stays_under_256_kib_at_the_largest_job_the_limits_accept() -> None:
    name = "a" * 45  # the longest that leaves room for "-worker-NNNNN" in a pod name
    workers = _largest_accepted("pi")
    for job_name in ("pi", name):
        job = big(workers, job_name)
        failed = {f"{job_name}_worker_{i}": "Failed" for i in range(0, workers, 7)}
        for pods in (all_pods(job, "Pending"), all_pods(job, "Running", **failed)):
            job.status = None
            started = time.perf_counter()
            status = written(job, pods)
            seconds = time.perf_counter() - started
            print(f"{workers} workers, name {len(job_name)}: {size(status)} B in {seconds:.2f}s")
            assert size(status) < STATUS_BUDGET
    assert workers > 20_000  # the old status: about 210 bytes a worker, over 4 MB


def test_counts_that_move_towards_running_are_progress_only() -> None:
    job = big(150)
    before = written(job, all_pods(job, "Pending"))
    job.status = None
    after = written(job, all_pods(job, "Pending", pi_worker_3="Running"))
    assert progress_only(before, after)
    job.status = None
    failed = written(job, all_pods(job, "Pending", pi_worker_3="Failed"))
    assert not progress_only(before, failed)
    job.status = None
    running = written(job, all_pods(job, "Running"))
    assert not progress_only(before, running)  # the phase changed
    assert not progress_only({**before, "conditions": []}, after)  # nothing written yet
