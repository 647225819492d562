"""The T9k sync handler, action by action: create, up to date, adopt, not ours, rejected
pods, expectations, slow-start batches, pause and resume, cleanUpWorkers order on
completion, one status write per sync and SyncFailed."""

from __future__ import annotations

from typing import Any

import pytest
from recording_client import ApiError, already_exists, forbidden, internal_error, invalid
from seam_objects import ChildBuilder, PodBuilder, T9kJobBuilder
from sync_fixtures import (
    REPEATS,
    SYNC_FAILED,
    SyncWorld,
    adoption,
    answer_existing,
    pod_names,
    t9k_world,
)
from sync_fixtures import running_t9k_job as running

SHARED = [
    ("create", "services", "pi"),
    ("create", "configmaps", "pi-config"),
    ("create", "secrets", "pi-ssh"),
]
STATUS = ("update", "mpijobs/status", "pi")
LAUNCHER = "pi-launcher"
T9K_OPERATOR = {"batch.tensorstack.dev/operator-name": "mpi-operator"}
#: Every pod of the job "pi", as a delete of the pods collection selects them.
JOB_PODS = "batch.tensorstack.dev/operator-name=mpi-operator,batch.tensorstack.dev/job-name=pi"
#: A delete of the pods collection.
DELETE_PODS = ("deletecollection", "pods", "")


def pods(*names: str, verb: str = "create") -> list[tuple[str, str, str]]:
    return [(verb, "pods", name) for name in names]


def conditions(world: SyncWorld) -> dict[str, tuple[str, str]]:
    return {t: (s, r) for t, s, r in world.conditions()}


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        pytest.param(
            T9kJobBuilder("pi").workers(2),
            [*SHARED, *pods(LAUNCHER, "pi-worker-0", "pi-worker-1"), STATUS],
            id="launcher-and-workers",
        ),
        pytest.param(
            T9kJobBuilder("pi").workers(1).t9k_scheduler("gpu"),
            [
                *SHARED,
                ("create", "podgroups", "pi"),  # read from the cache: no get
                *pods(LAUNCHER, "pi-worker-0"),
                STATUS,
            ],
            id="pod-group-first",
        ),
        pytest.param(T9kJobBuilder("pi").workers(2).pause(), [*SHARED, STATUS], id="paused"),
    ],
)
async def test_creates_the_children_of_a_new_job(
    builder: T9kJobBuilder, expected: list[tuple[str, str, str]]
) -> None:
    world = t9k_world(builder.obj())
    await world.sync()
    assert world.actions == expected
    for action in world.client.actions:
        if action.verb == "create":
            assert action.body["metadata"]["labels"].items() >= T9K_OPERATOR.items()
            assert action.body["metadata"]["ownerReferences"][0]["uid"] == "uid-pi"


async def test_a_new_job_is_written_pending_and_initialized() -> None:
    world = t9k_world(T9kJobBuilder("pi").workers(1).obj())
    await world.sync()
    assert world.status["phase"] == "Pending"
    assert conditions(world) == {"Initialized": ("True", "PodsCreated")}
    assert world.status["aggregate"]["creating"] == 0
    assert world.events == [("Normal", "MPIJobInitialized")]


async def test_do_nothing_when_children_are_up_to_date() -> None:
    world = await running(T9kJobBuilder("pi").workers(2))
    await world.sync()
    assert world.actions == []
    assert world.events == []


@pytest.mark.parametrize(
    ("kind", "resource", "name"),
    [
        ("Service", "services", "pi"),
        ("ConfigMap", "configmaps", "pi-config"),
        ("Secret", "secrets", "pi-ssh"),
    ],
)
async def test_adopts_a_child_it_controls_that_lacks_the_operator_label(
    kind: str, resource: str, name: str
) -> None:
    job = T9kJobBuilder("pi").obj()
    world = t9k_world(job)
    world.client.fail("create", resource, already_exists(name), name=name)
    answer_existing(world, resource, name, ChildBuilder(kind, name).owned_by(job).obj())
    await world.sync()
    calls = world.actions
    start = calls.index(("create", resource, name))
    adopt = adoption(resource, name)
    assert calls[start : start + 3] == adopt
    (write,) = world.recorded(adopt[2][0], resource, name)
    assert write.body["metadata"]["labels"].items() >= T9K_OPERATOR.items()
    assert calls[-1] == STATUS


@pytest.mark.parametrize(
    ("kind", "resource", "name"),
    [
        ("Service", "services", "pi"),
        ("ConfigMap", "configmaps", "pi-config"),
        ("Secret", "secrets", "pi-ssh"),
    ],
)
async def test_not_controlled_by_us(kind: str, resource: str, name: str) -> None:
    job = T9kJobBuilder("pi").obj()
    other = T9kJobBuilder("other").obj()
    world = t9k_world(job, ChildBuilder(kind, name).owned_by(other).obj())
    await world.sync_error()
    assert world.events == [("Warning", "ErrResourceExists")]
    assert world.event_messages("ErrResourceExists") == [
        f'Resource "{name}" of Kind "{kind}" already exists and is not managed by MPIJob'
    ]
    assert [w for w in world.writes if w[2] == name] == []
    assert world.recorded("create", "pods") == []
    assert STATUS not in world.writes


async def test_a_pod_it_does_not_control_is_not_taken_over() -> None:
    job = T9kJobBuilder("pi").obj()
    world = t9k_world(job)
    world.client.fail("create", "pods", already_exists(LAUNCHER), name=LAUNCHER)
    stranger = PodBuilder.t9k(job, "launcher").owned_by(T9kJobBuilder("x").obj()).obj()
    world.client.answer("get", "pods", LAUNCHER, stranger)
    await world.sync_error()
    # One batch: the worker's create goes beside the launcher's.
    assert [a for a in world.actions if a[2] == LAUNCHER] == [
        ("create", "pods", LAUNCHER),
        ("get", "pods", LAUNCHER),
    ]
    assert world.actions[len(SHARED) + 2 :] == [("create", "pods", "pi-worker-0")]
    assert world.event_messages("ErrResourceExists") == [
        f'Resource "{LAUNCHER}" of Kind "Pod" already exists and is not managed by MPIJob'
    ]


async def test_a_pod_group_of_someone_else_stops_the_pods() -> None:
    """Not in our label-filtered cache: the create conflicts, the GET finds it foreign."""
    job = T9kJobBuilder("pi").t9k_scheduler().obj()
    world = t9k_world(job)
    foreign = ChildBuilder("PodGroup", "pi").owned_by(T9kJobBuilder("x").obj()).obj()
    world.client.fail("create", "podgroups", already_exists("pi"), name="pi")
    world.client.answer("get", "podgroups", "pi", foreign)
    await world.sync_error()
    assert world.actions[len(SHARED) :] == [
        ("create", "podgroups", "pi"),
        ("get", "podgroups", "pi"),
    ]
    assert world.writes == [*SHARED, ("create", "podgroups", "pi")]
    assert world.event_messages("ErrResourceExists") == [
        'Resource "pi" of Kind "PodGroup" already exists and is not managed by MPIJob'
    ]


async def test_a_cached_pod_group_of_someone_else_stops_the_pods_without_a_read() -> None:
    job = T9kJobBuilder("pi").t9k_scheduler().obj()
    foreign = ChildBuilder("PodGroup", "pi").owned_by(T9kJobBuilder("x").obj()).obj()
    world = t9k_world(job, foreign)
    await world.sync_error()
    assert world.actions == SHARED
    assert world.event_messages("ErrResourceExists") == [
        'Resource "pi" of Kind "PodGroup" already exists and is not managed by MPIJob'
    ]


@pytest.mark.parametrize(
    ("queue", "expected"),
    [
        pytest.param("gpu", [], id="up-to-date"),
        pytest.param("cpu", [("update", "podgroups", "pi")], id="spec-changed"),
    ],
)
async def test_the_pod_group_is_read_from_its_cache_and_kept_up_to_date(
    queue: str, expected: list[tuple[str, str, str]]
) -> None:
    world = t9k_world(T9kJobBuilder("pi").workers(1).t9k_scheduler("gpu").obj())
    await world.converge()
    world.change("PodGroup", "pi", {"spec": {"queue": queue}})
    world.remove("Pod", "pi-worker-0")  # a pod to create: the PodGroup is looked at
    await world.sync()
    assert world.actions == [*expected, ("create", "pods", "pi-worker-0"), STATUS]
    for update in world.recorded("update", "podgroups"):
        assert update.body["spec"]["queue"] == "gpu"


async def test_the_pod_group_cache_starts_only_once_its_crd_is_served() -> None:
    """Until the first job needs a PodGroup its cache is not started; a LIST tells
    whether the kind is served, and a missing CRD is named on the job."""
    world = t9k_world(T9kJobBuilder("pi").workers(1).t9k_scheduler().obj(), pod_groups_synced=False)
    world.client.fail("list", "podgroups", ApiError(404, "404 page not found"))
    error = await world.sync_error()
    assert 'the CRD "podgroups.scheduler.tensorstack.dev"' in str(error)
    assert "spec.scheduler.t9kScheduler" in str(error)
    assert world.actions == [*SHARED, ("list", "podgroups", "")]
    assert not world.controller.informers.pod_groups.has_synced()


@pytest.mark.parametrize(
    "error", [invalid(), internal_error()], ids=lambda e: f"{e.status}-{e.reason}"
)
async def test_a_rejected_pod_is_retried_with_a_warning(error: ApiError) -> None:
    """Unlike the Kubeflow controller, T9k has no 422 fail-fast: it retries."""
    world = t9k_world(T9kJobBuilder("pi").workers(2).obj())
    world.client.fail("create", "pods", error, name="pi-worker-0")
    assert await world.sync_error() is error
    assert world.writes == [*SHARED, *pods(LAUNCHER, "pi-worker-0", "pi-worker-1")]
    assert world.events == [("Warning", "FailedCreatePod")]
    assert world.in_flight() == {LAUNCHER, "pi-worker-1"}


async def test_an_invalid_job_gets_a_validation_event_and_no_children() -> None:
    world = t9k_world(T9kJobBuilder("pi").no_command().obj())
    await world.sync()
    assert world.actions == []
    assert world.events == [("Warning", "ValidationError")]
    assert "cmd" in world.event_messages("ValidationError")[0]


async def test_pods_in_flight_are_not_created_twice() -> None:
    world = t9k_world(T9kJobBuilder("pi").workers(2).obj())
    await world.sync()
    world.forget()  # the pods' add events have not come yet
    await world.sync()
    assert pod_names(world) == []
    assert world.in_flight() == {LAUNCHER, "pi-worker-0", "pi-worker-1"}
    world.step(301)
    world.forget()
    await world.sync()
    assert pod_names(world) == [LAUNCHER, "pi-worker-0", "pi-worker-1"]


@pytest.mark.parametrize(
    ("workers", "failing", "attempted"),
    # The launcher is slot 0, worker i slot i + 1; batches of 8, 16, ...
    [
        (6, LAUNCHER, 7),
        (9, LAUNCHER, 8),
        (9, "pi-worker-6", 8),
        (9, "pi-worker-7", 10),
        (30, "pi-worker-8", 24),
    ],
)
async def test_slow_start_stops_after_the_batch_that_failed(
    workers: int, failing: str, attempted: int
) -> None:
    world = t9k_world(T9kJobBuilder("pi").workers(workers).obj())
    world.client.fail("create", "pods", internal_error(), name=failing)
    await world.sync_error()
    slots = [LAUNCHER, *(f"pi-worker-{i}" for i in range(workers))]
    assert pod_names(world) == slots[:attempted]


async def test_pausing_deletes_every_pod_then_reports_paused() -> None:
    world = await running(T9kJobBuilder("pi").workers(2))
    world.change("MPIJob", "pi", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await world.sync()
    (collection,) = world.recorded(*DELETE_PODS)
    assert collection.options == {"label_selector": JOB_PODS}
    assert world.writes == [DELETE_PODS]  # the status waits for the pods to be gone
    world.clear()
    assert world.names("Pod") == []
    await world.sync()
    assert world.writes == [STATUS]
    assert world.status["phase"] == "Paused"
    assert conditions(world)["Paused"] == ("True", "Paused")
    assert world.events == [("Normal", "MPIJobPaused")]


async def test_a_pause_also_takes_the_pods_the_cache_has_yet_to_show() -> None:
    """The delete of the collection takes a pod created but not yet cached, at the API
    server: on resume it is created again at once, not after the expectations' 5 min."""
    world = t9k_world(T9kJobBuilder("pi").workers(2).obj())
    await world.sync()
    world.clear()
    world.remove("Pod", "pi-worker-1")  # created, not yet shown by the informer
    world.change("MPIJob", "pi", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await world.sync()
    assert world.writes[0] == DELETE_PODS
    world.clear()
    assert world.names("Pod") == []
    world.change("MPIJob", "pi", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    await world.sync()
    assert sorted(pod_names(world)) == [LAUNCHER, "pi-worker-0", "pi-worker-1"]


async def test_resuming_creates_the_pods_again_for_the_resumed_run() -> None:
    world = await running(T9kJobBuilder("pi").workers(1))
    world.change("MPIJob", "pi", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await world.converge()
    world.change("MPIJob", "pi", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    await world.sync()
    assert world.writes == [*pods(LAUNCHER, "pi-worker-0"), STATUS]
    assert world.status["phase"] == "Resuming"
    assert conditions(world)["Paused"] == ("False", "Resumed")
    assert world.events == [("Normal", "MPIJobResuming")]


@pytest.mark.parametrize(
    ("policy", "deletes", "left"),
    [
        ("all", [DELETE_PODS], [LAUNCHER]),
        # pi-worker-1 finished and stays; one pod to delete goes by name.
        ("unfinished", pods("pi-worker-0", verb="delete"), [LAUNCHER, "pi-worker-1"]),
        ("none", [], [LAUNCHER, "pi-worker-0", "pi-worker-1"]),
        (True, [DELETE_PODS], [LAUNCHER]),
    ],
)
async def test_cleanup_on_completion_follows_clean_up_workers(
    policy: str | bool, deletes: list[tuple[str, str, str]], left: list[str]
) -> None:
    world = await running(T9kJobBuilder("pi").workers(2).clean_up_workers(policy))
    world.change("Pod", "pi-worker-1", {"status": {"phase": "Succeeded"}})
    world.change("Pod", LAUNCHER, {"status": {"phase": "Succeeded"}})
    await world.sync()
    assert world.writes == [STATUS, *deletes]  # the decision is written first
    world.settle()
    assert world.names("Pod") == left
    assert world.status["phase"] == "Succeeded"
    assert conditions(world)["Completed"] == ("True", "LauncherSucceeded")
    assert world.events == [("Normal", "MPIJobSucceeded")]
    world.clear()
    await world.sync()
    assert world.writes in ([], [STATUS])  # finished: nothing is created again
    world.clear()
    await world.sync()
    assert world.writes == []


async def test_unfinished_workers_are_one_collection_selected_by_phase() -> None:
    world = await running(T9kJobBuilder("pi").workers(3).clean_up_workers("unfinished"))
    world.change("Pod", "pi-worker-2", {"status": {"phase": "Failed"}})
    await world.sync()
    (collection,) = world.recorded(*DELETE_PODS)
    assert collection.namespace == "default"
    assert collection.options == {
        "label_selector": f"{JOB_PODS},batch.tensorstack.dev/replica-type=worker",
        "field_selector": "status.phase!=Succeeded,status.phase!=Failed",
    }
    world.settle()
    assert world.names("Pod") == [LAUNCHER, "pi-worker-2"]


async def test_workers_go_by_name_when_a_pod_the_selector_takes_is_not_the_jobs() -> None:
    world = await running(T9kJobBuilder("pi").workers(2).clean_up_workers("all"))
    stray = PodBuilder.t9k(world.cached("MPIJob", "pi") or {}, "worker", 7).running().obj()
    stray["metadata"]["ownerReferences"] = []
    world.add(stray)
    world.change("Pod", LAUNCHER, {"status": {"phase": "Succeeded"}})
    await world.sync()
    assert world.writes == [STATUS, *pods("pi-worker-0", "pi-worker-1", verb="delete")]
    world.settle()
    assert world.names("Pod") == [LAUNCHER, "pi-worker-7"]


async def test_without_the_right_to_delete_a_collection_pods_go_by_name() -> None:
    world = await running(T9kJobBuilder("pi").workers(2))
    world.client.fail("deletecollection", "pods", forbidden("cannot deletecollection pods"))
    world.change("MPIJob", "pi", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await world.sync()
    everyone = pods(LAUNCHER, "pi-worker-0", "pi-worker-1", verb="delete")
    assert world.writes == [DELETE_PODS, *everyone]
    world.settle()
    assert world.names("Pod") == []
    # Not asked again for ten minutes: the next deletes go by name at once.
    world.change("MPIJob", "pi", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    await world.converge()
    world.change("MPIJob", "pi", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await world.sync()
    assert world.writes == everyone
    world.change("MPIJob", "pi", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    await world.converge()
    world.change("MPIJob", "pi", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    world.step(600)
    await world.sync()
    assert world.writes == [DELETE_PODS, *everyone]


async def test_a_failed_worker_fails_the_job() -> None:
    world = await running(T9kJobBuilder("pi").workers(2).clean_up_workers("unfinished"))
    world.change("Pod", "pi-worker-0", {"status": {"phase": "Failed"}})
    await world.sync()
    assert world.writes == [STATUS, *pods("pi-worker-1", verb="delete")]
    assert world.status["phase"] == "Failed"
    assert conditions(world)["ReplicaFailure"] == ("True", "WorkerFailed")
    assert world.events == [("Warning", "MPIJobFailed")]


@pytest.mark.parametrize(
    ("change", "status_writes"),
    [
        pytest.param({"spec": {"worker": {"replicas": 3}}}, 1, id="scale-up"),
        # The status moves to Paused once the pods are gone, on a later sync.
        pytest.param({"spec": {"runMode": {"pause": {"enabled": True}}}}, 0, id="pause"),
        pytest.param({}, 1, id="launcher-succeeded"),
    ],
)
async def test_status_is_written_at_most_once_per_sync(
    change: dict[str, Any], status_writes: int
) -> None:
    world = await running(T9kJobBuilder("pi").workers(2).clean_up_workers("all"))
    if change:
        world.change("MPIJob", "pi", change)
    else:
        world.change("Pod", LAUNCHER, {"status": {"phase": "Succeeded"}})
    await world.sync()
    assert len(world.status_writes()) == status_writes
    if change:
        assert STATUS not in world.writes[:-1]  # after the children's writes
    else:
        assert world.writes[0] == STATUS  # an ending: written before the clean-up


async def test_a_failure_that_persists_is_reported_on_the_job_once() -> None:
    world = t9k_world(T9kJobBuilder("pi").obj())
    world.client.fail("create", "configmaps", internal_error("quota exceeded"))
    for _ in range(REPEATS):
        await world.sync_through_worker()
    assert world.events.count(("Warning", SYNC_FAILED)) == 1
    (reported,) = world.event_objects(SYNC_FAILED)
    assert reported["apiVersion"] == "batch.tensorstack.dev/v1beta1"
