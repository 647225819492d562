"""The Kubeflow sync handler's children, action by action (sample-controller style):
create, up to date, adopt, not ours, 422 fail-fast, invalid jobs, drift repaired."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from recording_client import ApiError, already_exists, forbidden, internal_error, invalid
from seam_objects import (
    KF,
    KF_OPERATOR,
    BatchJobBuilder,
    ChildBuilder,
    MPIJobBuilder,
    PodBuilder,
    owner_ref,
    pod_status,
)
from sync_fixtures import adoption, answer_existing, gang, kubeflow_world

SHARED = [
    ("create", "services", "pi"),
    ("create", "configmaps", "pi-config"),
    ("create", "secrets", "pi-ssh"),
]
Obj = dict[str, Any]
STATUS = ("update", "mpijobs/status", "pi")


def workers(n: int, verb: str = "create") -> list[tuple[str, str, str]]:
    return [(verb, "pods", f"pi-worker-{i}") for i in range(n)]


CREATED = ("Created", "True", "MPIJobCreated")


@pytest.mark.parametrize(
    ("builder", "expected", "events", "conditions"),
    [
        pytest.param(
            MPIJobBuilder("pi").workers(2),
            [*SHARED, *workers(2), ("create", "jobs", "pi-launcher"), STATUS],
            ["MPIJobCreated"],
            [CREATED],
            id="launcher-at-startup",
        ),
        pytest.param(
            MPIJobBuilder("pi").workers(2).wait_for_workers_ready(),
            [*SHARED, *workers(2), STATUS],
            ["MPIJobCreated"],
            [CREATED],
            id="launcher-waits-for-ready-workers",
        ),
        pytest.param(
            MPIJobBuilder("pi").workers(2).suspend(),
            [*SHARED, ("create", "jobs", "pi-launcher"), STATUS],
            ["MPIJobCreated", "MPIJobSuspended"],
            [
                CREATED,
                ("Suspended", "True", "MPIJobSuspended"),
                ("Running", "False", "MPIJobSuspended"),
            ],
            id="suspended-no-workers",
        ),
    ],
)
async def test_creates_the_children_of_a_new_job(
    builder: MPIJobBuilder,
    expected: list[tuple[str, str, str]],
    events: list[str],
    conditions: list[tuple[str, str, str]],
) -> None:
    world = kubeflow_world(builder.obj())
    await world.sync()
    assert world.actions == expected
    assert world.events == [("Normal", reason) for reason in events]
    assert world.conditions() == conditions


async def test_a_new_suspended_job_gets_a_suspended_launcher() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").suspend().obj())
    await world.sync()
    (launcher,) = world.recorded("create", "jobs")
    assert launcher.body["spec"]["suspend"] is True
    assert "startTime" not in world.status


async def test_children_carry_the_operator_label_and_our_controller_reference() -> None:
    job = MPIJobBuilder("pi").obj()
    world = kubeflow_world(job)
    await world.sync()
    created = [a for a in world.client.actions if a.verb == "create"]
    assert len(created) == 5
    for action in created:
        meta = action.body["metadata"]
        assert meta["labels"]["training.kubeflow.org/operator-name"] == "mpi-operator"
        assert meta["ownerReferences"] == [owner_ref(job)], action.short


async def test_gang_scheduling_creates_the_pod_group_before_the_pods() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(1).obj(), gang_scheduling=gang("volcano"))
    await world.sync()
    assert world.writes == [
        *SHARED,
        ("create", "podgroups", "pi"),
        *workers(1),
        ("create", "jobs", "pi-launcher"),
        STATUS,
    ]


async def test_do_nothing_when_children_are_up_to_date() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(2).obj())
    await world.converge()
    await world.sync()
    assert world.actions == []
    assert world.events == []


async def test_do_nothing_for_a_running_job_whose_children_are_up_to_date() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(2).obj())
    await world.converge()
    for i in range(2):
        world.change("Pod", f"pi-worker-{i}", {"status": pod_status("Running", ready=True)})
    launcher = world.cached("Job", "pi-launcher")
    assert launcher is not None
    world.add(PodBuilder.of_job(launcher).running().obj())
    await world.converge()  # the hostfile learns the running workers, Running is written
    await world.sync()
    assert world.actions == []


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
    """Made by an older operator: invisible to the label-filtered cache, so the create
    is answered AlreadyExists; the child is read, found ours, and labelled."""
    job = MPIJobBuilder("pi").obj()
    existing = ChildBuilder(kind, name).owned_by(job).obj()
    existing["metadata"]["resourceVersion"] = "42"
    world = kubeflow_world(job)
    world.client.fail("create", resource, already_exists(name), name=name)
    answer_existing(world, resource, name, existing)
    await world.sync()
    calls = world.actions
    adopt = adoption(resource, name)
    assert calls[calls.index(adopt[0]) : calls.index(adopt[0]) + 3] == adopt
    label = {"training.kubeflow.org/operator-name": "mpi-operator"}
    (write,) = world.recorded(adopt[2][0], resource, name)
    if resource == "secrets":
        # An update of the Secret as read: conditional on its resourceVersion.
        assert write.body["metadata"]["labels"].items() >= label.items()
        assert write.body["metadata"]["resourceVersion"] == "42"
        assert (write.body["apiVersion"], write.body["kind"]) == ("v1", "Secret")
    else:
        assert write.body == {"metadata": {"labels": label}}
    assert calls[-1] == STATUS
    assert ("Warning", "ErrResourceExists") not in world.events


async def test_adopts_a_launcher_job_it_controls_that_lacks_the_operator_label() -> None:
    job = MPIJobBuilder("pi").obj()
    world = kubeflow_world(job)
    world.client.fail("create", "jobs", already_exists("pi-launcher"))
    unlabelled = BatchJobBuilder("pi-launcher").owned_by(job).obj()
    world.client.answer("get", "jobs", "pi-launcher", unlabelled)
    await world.sync()
    # One create: the launcher goes through the shared create-or-adopt.
    assert world.actions[len(SHARED) + 1 :] == [
        ("create", "jobs", "pi-launcher"),
        ("get", "jobs", "pi-launcher"),
        ("patch", "jobs", "pi-launcher"),
        STATUS,
    ]


async def test_adopts_a_worker_pod_it_controls_that_the_cache_cannot_see() -> None:
    job = MPIJobBuilder("pi").obj()
    world = kubeflow_world(job)
    world.client.fail("create", "pods", already_exists("pi-worker-0"))
    world.client.answer("get", "pods", "pi-worker-0", PodBuilder.worker(job, 0).obj())
    await world.sync()
    assert world.actions == [
        *SHARED,
        ("create", "pods", "pi-worker-0"),
        ("get", "pods", "pi-worker-0"),
        ("create", "jobs", "pi-launcher"),
        STATUS,
    ]


@pytest.mark.parametrize("owner", ["someone-else", "orphan"])
@pytest.mark.parametrize(
    ("kind", "resource", "name"),
    [
        ("Service", "services", "pi"),
        ("ConfigMap", "configmaps", "pi-config"),
        ("Secret", "secrets", "pi-ssh"),
    ],
)
async def test_not_controlled_by_us_when_create_finds_it(
    kind: str, resource: str, name: str, owner: str
) -> None:
    """An existing child that another controller (or nobody) controls is left alone:
    one ErrResourceExists Warning, no write to it, no status write, a retry."""
    job = MPIJobBuilder("pi").obj()
    other = MPIJobBuilder("other").obj() if owner == "someone-else" else None
    world = kubeflow_world(job)
    world.client.fail("create", resource, already_exists(name), name=name)
    answer_existing(world, resource, name, ChildBuilder(kind, name).owned_by(other).obj())
    err = await world.sync_error()
    assert "is not managed by MPIJob" in str(err)
    assert world.events == [("Warning", "ErrResourceExists")]
    assert world.event_messages("ErrResourceExists") == [
        f'Resource "{name}" of Kind "" already exists and is not managed by MPIJob'
    ]
    assert [a for a in world.writes if a[2] == name] == [("create", resource, name)]
    assert STATUS not in world.writes
    assert not world.recorded("create", "pods")


@pytest.mark.parametrize(
    ("child", "writes"),
    [
        pytest.param(
            lambda job: ChildBuilder("Service", "pi").owned_by(MPIJobBuilder("x").obj()),
            [SHARED[1], SHARED[2]],
            id="service",
        ),
        pytest.param(
            lambda job: PodBuilder.worker(job, 0).owned_by(MPIJobBuilder("x").obj()),
            SHARED,
            id="worker-pod",
        ),
        pytest.param(
            # Ours by label but not a worker: found by name all the same, never replaced.
            lambda job: PodBuilder("pi-worker-0").owned_by(None).labels(**launcher_labels()),
            SHARED,
            id="non-worker-pod-named-like-a-worker",
        ),
        pytest.param(
            lambda job: BatchJobBuilder.launcher(job).owned_by(None),
            [],
            id="launcher-job",
        ),
    ],
)
async def test_not_controlled_by_us_when_the_cache_has_it(
    child: Callable[[Obj], Any], writes: list[tuple[str, str, str]]
) -> None:
    job = MPIJobBuilder("pi").obj()
    world = kubeflow_world(job, child(job).obj())
    await world.sync_error()
    assert world.events == [("Warning", "ErrResourceExists")]
    assert world.writes == writes


def launcher_labels(job: str = "pi") -> dict[str, str]:
    return {**KF_OPERATOR, KF + "job-name": job, KF + "job-role": "launcher"}


async def test_a_pod_we_control_named_like_a_worker_is_kept_as_that_worker() -> None:
    """Not labelled as a worker, but controlled by the job: counted, neither replaced
    nor reported, as the reference finds workers by name."""
    job = MPIJobBuilder("pi").workers(2).obj()
    pod = PodBuilder("pi-worker-0").owned_by(job).labels(**launcher_labels())
    world = kubeflow_world(job, pod.obj())
    await world.sync()
    assert world.writes[: len(SHARED) + 1] == [*SHARED, ("create", "pods", "pi-worker-1")]
    assert ("create", "pods", "pi-worker-0") not in world.writes
    assert ("Warning", "ErrResourceExists") not in world.events


async def test_fails_fast_when_the_api_server_rejects_the_worker_template() -> None:
    """422 Invalid: the same pod is rejected every time, so the job fails at once
    (Failed / InvalidPodTemplate) instead of retrying for ever; no launcher."""
    world = kubeflow_world(MPIJobBuilder("pi").workers(3).obj())
    world.client.fail("create", "pods", invalid("spec.containers[0].image: Required value"))
    await world.sync()  # no error: nothing to retry
    assert world.writes == [*SHARED, *workers(3), STATUS]  # one batch
    assert ("Failed", "True", "InvalidPodTemplate") in world.conditions()
    assert world.events == [
        *[("Warning", "MPIJobFailed")] * 2,
        ("Warning", "MPIJobFailed"),
        ("Normal", "MPIJobCreated"),
        ("Warning", "InvalidPodTemplate"),
    ]
    assert "spec.containers[0].image: Required value" in world.status["conditions"][-1]["message"]
    assert world.status["completionTime"] == "2026-01-01T00:00:00Z"


async def test_fails_fast_when_the_api_server_rejects_the_launcher() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(1).obj())
    world.client.fail("create", "jobs", invalid("spec.template: Invalid value"))
    await world.sync()
    assert world.writes == [*SHARED, *workers(1), ("create", "jobs", "pi-launcher"), STATUS]
    assert world.conditions()[-1] == ("Failed", "True", "InvalidPodTemplate")
    assert ("Warning", "InvalidPodTemplate") in world.events


@pytest.mark.parametrize("resource", ["services", "configmaps", "secrets"])
async def test_a_rejected_shared_child_is_retried_not_failed(resource: str) -> None:
    """Only a rejected pod template fails the job: a 422 on the Service, ConfigMap or
    Secret is the sync's error, retried, and no status is written."""
    world = kubeflow_world(MPIJobBuilder("pi").workers(1).obj())
    error = invalid("metadata.name: Invalid value")
    world.client.fail("create", resource, error)
    assert await world.sync_error() is error
    assert world.status_writes() == []
    assert ("Warning", "InvalidPodTemplate") not in world.events


@pytest.mark.parametrize(
    "error", [internal_error(), forbidden()], ids=lambda e: f"{e.status}-{e.reason}"
)
async def test_other_create_errors_are_retried_without_a_status_write(error: ApiError) -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(2).obj())
    world.client.fail("create", "pods", error)
    assert await world.sync_error() is error
    assert world.writes == [*SHARED, *workers(2)]  # one batch
    assert world.events == [("Warning", "MPIJobFailed")] * 2
    assert world.in_flight() == set()  # the failed create is expected no more


@pytest.mark.parametrize(
    ("builder", "field"),
    [
        pytest.param(
            MPIJobBuilder("pi").launchers(2),
            "mpiReplicaSpecs[Launcher].replicas",
            id="two-launchers",
        ),
        pytest.param(
            MPIJobBuilder("pi").workers(100_001),
            "mpiReplicaSpecs[Worker].replicas",
            id="over-the-cap",
        ),
        pytest.param(
            MPIJobBuilder("pi").clean_pod_policy("Sometimes"), "cleanPodPolicy", id="enum"
        ),
    ],
)
async def test_an_invalid_job_gets_a_validation_event_and_no_children(
    builder: MPIJobBuilder, field: str
) -> None:
    world = kubeflow_world(builder.obj())
    await world.sync()
    assert world.actions == []
    assert world.events == [("Warning", "ValidationError")]
    (message,) = world.event_messages("ValidationError")
    assert field in message


@pytest.mark.parametrize(
    "builder",
    [
        pytest.param(MPIJobBuilder("pi").managed_by("kueue.x-k8s.io/multikueue"), id="managed"),
        pytest.param(MPIJobBuilder("pi").terminating(), id="being-deleted"),
    ],
)
async def test_does_nothing_for_a_job_it_must_not_touch(builder: MPIJobBuilder) -> None:
    world = kubeflow_world(builder.obj())
    await world.sync()
    assert world.actions == []
    assert world.events == []


async def test_does_nothing_for_a_deleted_job() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").obj())
    world.remove("MPIJob", "pi")
    await world.sync()
    assert world.actions == []


@pytest.mark.parametrize(
    ("kind", "name", "drift", "repair"),
    [
        pytest.param(
            "Service",
            "pi",
            {"spec": {"selector": {"app": "other"}}},
            ("update", "services", "pi"),
            id="service-selector",
        ),
        pytest.param(
            "ConfigMap",
            "pi-config",
            {"data": {"hostfile": "intruder slots=64\n"}},
            ("update", "configmaps", "pi-config"),
            id="hostfile",
        ),
        pytest.param(
            "Secret",
            "pi-ssh",
            {"data": {"ssh-publickey": None}},
            ("update", "secrets", "pi-ssh"),
            id="secret-key-missing",
        ),
    ],
)
async def test_repairs_a_child_that_drifted(
    kind: str, name: str, drift: Obj, repair: tuple[str, str, str]
) -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(1).obj())
    await world.converge()
    world.change(kind, name, drift)
    await world.sync()
    assert world.writes == [repair]
    await world.converge()  # and it stays repaired


async def test_gang_scheduling_reports_a_pod_group_it_does_not_control() -> None:
    job = MPIJobBuilder("pi").obj()
    foreign = ChildBuilder("PodGroup", "pi", api_version="scheduling.volcano.sh/v1beta1")
    world = kubeflow_world(
        job, foreign.owned_by(MPIJobBuilder("x").obj()).obj(), gang_scheduling=gang("volcano")
    )
    await world.sync_error()
    assert world.writes == SHARED
    assert world.event_messages("ErrResourceExists") == [
        'Resource "pi" of Kind "PodGroup" already exists and is not managed by MPIJob'
    ]


async def test_gang_scheduling_deletes_the_pod_group_on_suspend() -> None:
    world = kubeflow_world(MPIJobBuilder("pi").workers(1).obj(), gang_scheduling=gang("volcano"))
    await world.converge()
    world.change("MPIJob", "pi", {"spec": {"runPolicy": {"suspend": True}}})
    await world.sync()
    assert world.writes == [
        ("update", "jobs", "pi-launcher"),
        ("delete", "pods", "pi-worker-0"),
        ("delete", "podgroups", "pi"),
        STATUS,
    ]
