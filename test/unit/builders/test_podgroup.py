"""PodGroup builders: the cases of upstream's podgroup_test.go plus the corner
cases of minResources (priority ordering, truncation, quantity formats)."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.api.v2beta1 import MPIJob
from mpi_operator.builders.podgroup import (
    GangKind,
    GangScheduling,
    calculate_min_available,
    calculate_min_resources,
    calculate_priority_class_name,
    compute_min_resources,
    decorate_pod_template,
    new_pod_group,
    new_scheduler_plugins_pod_group,
    new_volcano_pod_group,
    overwritten_scheduler_name,
    pod_group_specs_equal,
    updated_pod_group,
)

Obj = dict[str, Any]

VOLCANO = GangScheduling.volcano()
PLUGINS = GangScheduling.scheduler_plugins("default-scheduler")

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


def volcano_pg(spec: Obj) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": METADATA,
        "spec": spec,
    }


def plugins_pg(spec: Obj) -> Obj:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": METADATA,
        "spec": spec,
    }


MIN_RESOURCES = {"cpu": "100", "memory": "512Gi", "example.com/gpu": "40"}

# -- whole PodGroups (upstream TestNewPodGroup and more) ---------------------------

NEW_POD_GROUP_CASES: dict[str, tuple[MPIJob, Obj, Obj]] = {
    "all schedulingPolicy fields are set": (
        job(
            annotations={"scheduling.volcano.sh/queue-name": "project-x"},
            policy={
                "minAvailable": 2,
                "queue": "project-y",
                "priorityClass": "high",
                "minResources": MIN_RESOURCES,
                "scheduleTimeoutSeconds": 100,
            },
            launcher=replica(1, container({"cpu": "1", "memory": "2Gi"})),
            worker=replica(1000, container({"cpu": "10", "memory": "20Gi"})),
        ),
        volcano_pg(
            {
                "minMember": 2,
                "queue": "project-y",
                "priorityClassName": "high",
                "minResources": {"cpu": "100", "example.com/gpu": "40", "memory": "512Gi"},
            }
        ),
        plugins_pg(
            {
                "minMember": 2,
                "minResources": {"cpu": "100", "example.com/gpu": "40", "memory": "512Gi"},
                "scheduleTimeoutSeconds": 100,
            }
        ),
    ),
    "schedulingPolicy is nil": (
        job(
            annotations={"scheduling.volcano.sh/queue-name": "project-x"},
            launcher=replica(1, container({"cpu": "1", "memory": "2Gi"}), priority_class="high"),
            worker=replica(2, container({"cpu": "10", "memory": "20Gi"})),
        ),
        volcano_pg(
            {
                "minMember": 3,
                "queue": "project-x",
                "priorityClassName": "high",
                "minResources": {"cpu": "21", "memory": "42Gi"},
            }
        ),
        plugins_pg(
            {
                "minMember": 3,
                "minResources": {"cpu": "21", "memory": "42Gi"},
                "scheduleTimeoutSeconds": 0,
            }
        ),
    ),
    "no worker no MinResources": (
        job(
            annotations={"scheduling.volcano.sh/queue-name": "project-x"},
            runLauncherAsWorker=True,
            policy={
                "minAvailable": 1,
                "queue": "project-y",
                "priorityClass": "high",
                "scheduleTimeoutSeconds": 100,
            },
            launcher=replica(1, container({"cpu": "1", "memory": "2Gi"})),
        ),
        volcano_pg(
            {
                "minMember": 1,
                "queue": "project-y",
                "priorityClassName": "high",
                "minResources": {"cpu": "1", "memory": "2Gi"},
            }
        ),
        plugins_pg(
            {
                "minMember": 1,
                "minResources": {"cpu": "1", "memory": "2Gi"},
                "scheduleTimeoutSeconds": 100,
            }
        ),
    ),
    "minAvailable 0 leaves minMember and minResources out": (
        job(
            policy={"minAvailable": 0},
            launcher=replica(1, container({"cpu": "1"})),
            worker=replica(2, container({"cpu": "2"})),
        ),
        volcano_pg({}),
        plugins_pg({"scheduleTimeoutSeconds": 0}),
    ),
    "no container resources: volcano keeps an empty minResources": (
        job(
            launcher=replica(1, container()),
            worker=replica(2, {"name": "c", "image": "img"}),
        ),
        volcano_pg({"minMember": 3, "minResources": {}}),
        plugins_pg({"minMember": 3, "scheduleTimeoutSeconds": 0}),
    ),
    "empty schedulingPolicy.minResources is passed through": (
        job(
            policy={"minResources": {}, "scheduleTimeoutSeconds": 0},
            launcher=replica(1, container({"cpu": "1"})),
            worker=replica(2, container({"cpu": "2"})),
        ),
        volcano_pg({"minMember": 3, "minResources": {}}),
        plugins_pg({"minMember": 3, "scheduleTimeoutSeconds": 0}),
    ),
    "schedulingPolicy.minResources is canonicalized like a Go round trip": (
        job(
            policy={"minResources": {"cpu": "1000m", "memory": "1024Mi", "pods": 4, "x": "+1"}},
            launcher=replica(1, container({"cpu": "1"})),
            worker=replica(2, container({"cpu": "2"})),
        ),
        volcano_pg(
            {"minMember": 3, "minResources": {"cpu": "1", "memory": "1Gi", "pods": "4", "x": "+1"}}
        ),
        plugins_pg(
            {
                "minMember": 3,
                "minResources": {"cpu": "1", "memory": "1Gi", "pods": "4", "x": "+1"},
                "scheduleTimeoutSeconds": 0,
            }
        ),
    ),
    "queue from the schedulingPolicy wins over the annotation; worker priority class": (
        job(
            annotations={"scheduling.volcano.sh/queue-name": "from-annotation"},
            policy={"queue": "from-policy"},
            launcher=replica(1, container({"cpu": "500m"})),
            worker=replica(3, container({"cpu": "1500m"}), priority_class="low"),
        ),
        volcano_pg(
            {
                "minMember": 4,
                "queue": "from-policy",
                "priorityClassName": "low",
                "minResources": {"cpu": "5"},
            }
        ),
        plugins_pg({"minMember": 4, "minResources": {"cpu": "5"}, "scheduleTimeoutSeconds": 0}),
    ),
    "empty policy queue falls back to the annotation": (
        job(
            annotations={"scheduling.volcano.sh/queue-name": "from-annotation"},
            policy={"queue": ""},
            launcher=replica(1, container({"memory": "1.5Gi"})),
            worker=replica(2, container({"memory": "1.5Gi"})),
        ),
        volcano_pg(
            {"minMember": 3, "queue": "from-annotation", "minResources": {"memory": "4608Mi"}}
        ),
        plugins_pg(
            {"minMember": 3, "minResources": {"memory": "4608Mi"}, "scheduleTimeoutSeconds": 0}
        ),
    ),
}


@pytest.mark.parametrize(
    ("mpi_job", "want_volcano", "want_plugins"),
    list(NEW_POD_GROUP_CASES.values()),
    ids=list(NEW_POD_GROUP_CASES),
)
def test_new_pod_group(mpi_job: MPIJob, want_volcano: Obj, want_plugins: Obj) -> None:
    before = mpi_job.model_dump()
    assert new_volcano_pod_group(mpi_job, {}) == want_volcano
    assert new_scheduler_plugins_pod_group(mpi_job, {}) == want_plugins
    assert new_pod_group(mpi_job, VOLCANO, {}) == want_volcano
    assert new_pod_group(mpi_job, PLUGINS, {}) == want_plugins
    assert mpi_job.model_dump() == before


def test_pod_group_without_namespace_omits_it() -> None:
    mpi_job = MPIJob.from_dict(
        {
            "metadata": {"name": "test", "uid": "uid-1"},
            "spec": {"mpiReplicaSpecs": {"Launcher": replica(1), "Worker": replica(1)}},
        }
    )
    assert new_volcano_pod_group(mpi_job, {})["metadata"] == {
        "name": "test",
        "ownerReferences": [OWNER],
    }


# -- priority class name (upstream TestCalcPriorityClassName) ----------------------


@pytest.mark.parametrize(
    ("mpi_job", "want"),
    [
        pytest.param(job(policy={"priorityClass": "high"}), "high", id="use schedulingPolicy"),
        pytest.param(
            job(
                policy={"priorityClass": "high"},
                launcher=replica(1, priority_class="mid"),
                worker=replica(1, priority_class="low"),
            ),
            "high",
            id="schedulingPolicy wins",
        ),
        pytest.param(
            job(
                launcher=replica(None, priority_class="high"),
                worker=replica(None, priority_class="low"),
            ),
            "high",
            id="use launcher",
        ),
        pytest.param(
            job(launcher=replica(None), worker=replica(None, priority_class="low")),
            "low",
            id="use worker",
        ),
        pytest.param(job(launcher=replica(None), worker=replica(None)), "", id="nothing"),
        pytest.param(
            job(policy={"priorityClass": ""}, worker=replica(None, priority_class="low")),
            "low",
            id="empty policy class is ignored",
        ),
    ],
)
def test_calculate_priority_class_name(mpi_job: MPIJob, want: str) -> None:
    assert calculate_priority_class_name(mpi_job) == want


# -- minAvailable (upstream TestCalculateMinAvailable) ------------------------------


@pytest.mark.parametrize(
    ("mpi_job", "want"),
    [
        pytest.param(
            job(policy={"minAvailable": 2}, launcher=replica(1), worker=replica(1000)),
            2,
            id="minAvailable isn't empty",
        ),
        pytest.param(job(launcher=replica(1), worker=replica(99)), 100, id="minAvailable is empty"),
        pytest.param(job(launcher=replica(1)), 1, id="no worker"),
        pytest.param(
            job(policy={"minAvailable": 0}, launcher=replica(1), worker=replica(5)),
            0,
            id="minAvailable is zero",
        ),
    ],
)
def test_calculate_min_available(mpi_job: MPIJob, want: int) -> None:
    assert calculate_min_available(mpi_job) == want


# -- minResources (upstream TestCalculatePGMinResources, TestAddResources) --------

PRIORITIES = {"high": 100_010, "low": 10_010}

MIN_RESOURCES_CASES: dict[str, tuple[MPIJob, int | None, dict[str, int], Obj | None]] = {
    "minResources is not empty": (
        job(policy={"minResources": MIN_RESOURCES}),
        0,
        {},
        {"cpu": "100", "example.com/gpu": "40", "memory": "512Gi"},
    ),
    "schedulingPolicy is nil": (job(), 0, {}, None),
    "minMember is 0": (job(launcher=replica(1, container({"cpu": "1"}))), 0, {}, None),
    "without priorityClass": (
        job(
            launcher=replica(1, container({"cpu": "2", "memory": "1Gi"})),
            worker=replica(2, container({"cpu": "10", "memory": "32Gi"})),
        ),
        3,
        {},
        {"cpu": "22", "memory": "65Gi"},
    ),
    "without worker without priorityClass": (
        job(launcher=replica(1, container({"cpu": "2", "memory": "1Gi"}))),
        1,
        {},
        {"cpu": "2", "memory": "1Gi"},
    ),
    "several containers": (
        job(
            launcher=replica(1, container({"cpu": "2", "memory": "1Gi"})),
            worker=replica(
                2,
                container({"cpu": "10", "memory": "32Gi"}),
                container({"cpu": "50", "memory": "512Gi"}),
            ),
        ),
        None,
        {},
        {"cpu": "122", "memory": "1089Gi"},
    ),
    "with non-existence priorityClass": (
        job(
            launcher=replica(
                1, container({"cpu": "2", "memory": "2Gi"}), priority_class="non-existence"
            ),
            worker=replica(
                2, container({"cpu": "5", "memory": "16Gi"}), priority_class="non-existence"
            ),
        ),
        2,
        {},
        {"cpu": "7", "memory": "18Gi"},
    ),
    "with existence priorityClass": (
        job(
            launcher=replica(1, container({"cpu": "2", "memory": "4Gi"}), priority_class="high"),
            worker=replica(100, container({"cpu": "20", "memory": "64Gi"}), priority_class="low"),
        ),
        2,
        PRIORITIES,
        {"cpu": "22", "memory": "68Gi"},
    ),
    # The lower-priority replica type is cut to minMember-1 even when it is the
    # launcher; the higher-priority workers then all count.
    "workers with higher priority: the launcher is truncated": (
        job(
            launcher=replica(1, container({"cpu": "1", "memory": "1Gi"}), priority_class="low"),
            worker=replica(3, container({"cpu": "10", "memory": "8Gi"}), priority_class="high"),
        ),
        2,
        PRIORITIES,
        {"cpu": "31", "memory": "25Gi"},
    ),
    "minMember 1 with workers: worker resources multiplied by zero": (
        job(
            launcher=replica(1, container({"cpu": "1"})),
            worker=replica(4, container({"cpu": "8", "nvidia.com/gpu": "1"})),
        ),
        1,
        {},
        {"cpu": "1", "nvidia.com/gpu": "0"},
    ),
    "minMember larger than the replicas: nothing truncated": (
        job(
            launcher=replica(1, container({"cpu": "1"})),
            worker=replica(2, container({"cpu": "2"})),
        ),
        10,
        {},
        {"cpu": "5"},
    ),
    "requests fall back to limits per resource": (
        job(
            launcher=replica(
                1,
                container(
                    {"cpu": "10", "memory": "16Gi"},
                    {"example.com/gpu": "8", "cpu": "20", "memory": "32Gi"},
                ),
            ),
        ),
        1,
        {},
        {"cpu": "10", "example.com/gpu": "8", "memory": "16Gi"},
    ),
    "only limits": (
        job(
            launcher=replica(1, container(None, {"cpu": "1"})),
            worker=replica(2, container(None, {"cpu": "250m", "memory": "100M"})),
        ),
        None,
        {},
        {"cpu": "1500m", "memory": "200M"},
    ),
    "formats: the first replica's format wins, sums are canonical": (
        job(
            launcher=replica(1, container({"cpu": "100m", "memory": "1G", "ephemeral": "0"})),
            worker=replica(
                3, container({"cpu": "300m", "memory": "1Gi", "ephemeral": "1Ki", "x": "1e3"})
            ),
        ),
        None,
        {},
        {"cpu": "1", "ephemeral": "3Ki", "memory": "4221225472", "x": "3e3"},
    ),
    "fractional binary quantities": (
        job(
            launcher=replica(1, container({"memory": "0.5Gi"})),
            worker=replica(2, container({"memory": "1.5Gi"})),
        ),
        None,
        {},
        {"memory": "3584Mi"},
    ),
    "sub-milli quantities": (
        job(
            launcher=replica(1, container({"cpu": "0.0000000001"})),
            worker=replica(3, container({"cpu": "1u"})),
        ),
        None,
        {},
        {"cpu": "3001n"},
    ),
    "numbers in JSON": (
        job(launcher=replica(1, container({"cpu": 2})), worker=replica(2, container({"cpu": 0.5}))),
        None,
        {},
        {"cpu": "3"},
    ),
}


@pytest.mark.parametrize(
    ("mpi_job", "min_member", "priorities", "want"),
    list(MIN_RESOURCES_CASES.values()),
    ids=list(MIN_RESOURCES_CASES),
)
def test_calculate_min_resources(
    mpi_job: MPIJob, min_member: int | None, priorities: dict[str, int], want: Obj | None
) -> None:
    assert calculate_min_resources(mpi_job, min_member, priorities) == want


def test_launcher_only_truncation_has_no_worker_to_cut() -> None:
    # Upstream would look for a second replica type here; with no worker the
    # calculation gives up, as upstream does when it finds no worker.
    mpi_job = job(launcher=replica(1, container({"cpu": "1"})))
    assert compute_min_resources(mpi_job, -1, {}) is None


def test_min_resources_in_pod_group_use_priority_classes() -> None:
    mpi_job = job(
        launcher=replica(1, container({"cpu": "2", "memory": "4Gi"}), priority_class="high"),
        worker=replica(100, container({"cpu": "20", "memory": "64Gi"}), priority_class="low"),
        policy={"minAvailable": 2},
    )
    assert new_pod_group(mpi_job, PLUGINS, PRIORITIES) == plugins_pg(
        {
            "minMember": 2,
            "minResources": {"cpu": "22", "memory": "68Gi"},
            "scheduleTimeoutSeconds": 0,
        }
    )
    assert new_pod_group(mpi_job, VOLCANO, PRIORITIES) == volcano_pg(
        {
            "minMember": 2,
            "priorityClassName": "high",
            "minResources": {"cpu": "22", "memory": "68Gi"},
        }
    )


# -- pod template decoration (upstream TestDecoratePodTemplateSpec) ---------------


@pytest.mark.parametrize(
    ("template", "gang", "want", "overwritten"),
    [
        pytest.param(
            {},
            VOLCANO,
            {
                "metadata": {"annotations": {"scheduling.k8s.io/group-name": "test-mpijob"}},
                "spec": {"schedulerName": "volcano"},
            },
            "",
            id="volcano on an empty template",
        ),
        pytest.param(
            {},
            PLUGINS,
            {
                "metadata": {"labels": {"scheduling.x-k8s.io/pod-group": "test-mpijob"}},
                "spec": {"schedulerName": "default-scheduler"},
            },
            "",
            id="scheduler-plugins on an empty template",
        ),
        pytest.param(
            {
                "metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}},
                "spec": {"schedulerName": "other", "containers": [{"name": "x"}]},
            },
            VOLCANO,
            {
                "metadata": {
                    "labels": {"a": "b"},
                    "annotations": {"c": "d", "scheduling.k8s.io/group-name": "test-mpijob"},
                },
                "spec": {"schedulerName": "volcano", "containers": [{"name": "x"}]},
            },
            "other",
            id="volcano keeps other metadata and replaces the scheduler",
        ),
        pytest.param(
            {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"schedulerName": "default-scheduler"},
            },
            PLUGINS,
            {
                "metadata": {"labels": {"a": "b", "scheduling.x-k8s.io/pod-group": "test-mpijob"}},
                "spec": {"schedulerName": "default-scheduler"},
            },
            None,
            id="scheduler-plugins with the same scheduler already set",
        ),
    ],
)
def test_decorate_pod_template(
    template: Obj, gang: GangScheduling, want: Obj, overwritten: str | None
) -> None:
    snapshot = repr(template)
    assert overwritten_scheduler_name(template, gang) == overwritten
    assert decorate_pod_template(template, "test-mpijob", gang) == want
    assert repr(template) == snapshot


def test_decorated_template_shares_nothing_with_the_input() -> None:
    template: Obj = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "x"}]}}
    out = decorate_pod_template(template, "j", PLUGINS)
    out["spec"]["containers"][0]["name"] = "y"
    out["metadata"]["labels"]["a"] = "z"
    assert template == {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "x"}]}}


# -- gang-scheduling settings ---------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "want"),
    [
        ("", None),
        ("volcano", GangScheduling(GangKind.VOLCANO, "volcano")),
        ("scheduler-plugins-scheduler", GangScheduling(GangKind.SCHEDULER_PLUGINS,
                                                        "scheduler-plugins-scheduler")),
        ("default-scheduler", GangScheduling(GangKind.SCHEDULER_PLUGINS, "default-scheduler")),
    ],
)  # fmt: skip
def test_gang_scheduling_from_flag(flag: str, want: GangScheduling | None) -> None:
    assert GangScheduling.from_flag(flag) == want


def test_gang_scheduling_api() -> None:
    assert VOLCANO.api_version == "scheduling.volcano.sh/v1beta1"
    assert (VOLCANO.group, VOLCANO.version) == ("scheduling.volcano.sh", "v1beta1")
    assert PLUGINS.api_version == "scheduling.x-k8s.io/v1alpha1"
    assert (PLUGINS.group, PLUGINS.version) == ("scheduling.x-k8s.io", "v1alpha1")


# -- spec comparison and update ------------------------------------------------------


def _pg(spec: Obj | None, **extra: Any) -> Obj:
    out: Obj = {"metadata": {"name": "test"}, **extra}
    if spec is not None:
        out["spec"] = spec
    return out


@pytest.mark.parametrize(
    ("gang", "a", "b", "equal"),
    [
        pytest.param(VOLCANO, {"minMember": 3}, {"minMember": 3}, True, id="v same"),
        pytest.param(VOLCANO, {"minMember": 3}, {"minMember": 4}, False, id="v minMember"),
        pytest.param(VOLCANO, {}, {"minMember": 0, "queue": ""}, True, id="v zero values"),
        pytest.param(VOLCANO, None, {}, True, id="v missing spec"),
        pytest.param(VOLCANO, {"queue": "a"}, {"queue": "b"}, False, id="v queue"),
        pytest.param(VOLCANO, {"priorityClassName": "a"}, {}, False, id="v priorityClassName"),
        pytest.param(
            VOLCANO,
            {"minResources": {"cpu": "1", "memory": "1Gi"}},
            {"minResources": {"cpu": "1000m", "memory": "1024Mi"}},
            True,
            id="v quantities compare by value",
        ),
        pytest.param(
            VOLCANO,
            {"minResources": {"cpu": "1"}},
            {"minResources": {"cpu": "2"}},
            False,
            id="v quantity differs",
        ),
        pytest.param(
            VOLCANO,
            {"minResources": {"cpu": "1"}},
            {"minResources": {"cpu": "1", "memory": "1"}},
            False,
            id="v resource names differ",
        ),
        pytest.param(
            VOLCANO, {"minResources": {}}, {}, False, id="v empty minResources is not unset"
        ),
        pytest.param(VOLCANO, {"minResources": None}, {}, True, id="v null minResources is unset"),
        pytest.param(
            VOLCANO,
            {"minTaskMember": {}, "subGroupPolicy": []},
            {},
            True,
            id="v empty map and list are unset",
        ),
        pytest.param(VOLCANO, {"minTaskMember": {"a": 1}}, {}, False, id="v minTaskMember differs"),
        pytest.param(
            VOLCANO,
            {"networkTopology": {"mode": "hard"}},
            {},
            False,
            id="v networkTopology set on one side",
        ),
        pytest.param(
            VOLCANO,
            {"minMember": 1, "unknownField": "x"},
            {"minMember": 1},
            True,
            id="v unknown fields ignored",
        ),
        pytest.param(
            PLUGINS,
            {"minMember": 3, "scheduleTimeoutSeconds": 0},
            {"minMember": 3, "scheduleTimeoutSeconds": 0},
            True,
            id="p same",
        ),
        pytest.param(
            PLUGINS,
            {"scheduleTimeoutSeconds": 0},
            {},
            False,
            id="p scheduleTimeoutSeconds 0 is not unset",
        ),
        pytest.param(
            PLUGINS,
            {"scheduleTimeoutSeconds": 10},
            {"scheduleTimeoutSeconds": 20},
            False,
            id="p scheduleTimeoutSeconds differs",
        ),
        pytest.param(PLUGINS, {"minResources": {}}, {}, True, id="p empty minResources is unset"),
        pytest.param(
            PLUGINS,
            {"minResources": {"memory": "2Gi"}},
            {"minResources": {"memory": "2048Mi"}},
            True,
            id="p quantities compare by value",
        ),
        pytest.param(
            PLUGINS,
            {"minMember": 2, "queue": "ignored"},
            {"minMember": 2},
            True,
            id="p fields of the other kind ignored",
        ),
    ],
)
def test_pod_group_specs_equal(
    gang: GangScheduling, a: Obj | None, b: Obj | None, equal: bool
) -> None:
    assert pod_group_specs_equal(gang, _pg(a), _pg(b)) is equal
    assert pod_group_specs_equal(gang, _pg(b), _pg(a)) is equal


def test_pod_group_specs_equal_ignores_metadata_and_status() -> None:
    a = _pg({"minMember": 1}, status={"phase": "Running"})
    b = {"metadata": {"name": "other"}, "spec": {"minMember": 1}}
    assert pod_group_specs_equal(VOLCANO, a, b)


def test_new_pod_group_equals_itself_after_a_go_round_trip() -> None:
    mpi_job = job(
        launcher=replica(1, container({"cpu": "1", "memory": "2Gi"})),
        worker=replica(2, container({"cpu": "10", "memory": "20Gi"})),
    )
    for gang in (VOLCANO, PLUGINS):
        desired = new_pod_group(mpi_job, gang, {})
        stored = {**desired, "spec": {**desired["spec"]}, "status": {"phase": "Pending"}}
        stored["spec"]["minResources"] = {"cpu": "21000m", "memory": "43008Mi"}
        assert pod_group_specs_equal(gang, stored, desired)


def test_updated_pod_group_replaces_only_the_spec() -> None:
    existing = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "test", "resourceVersion": "7"},
        "spec": {"minMember": 1, "queue": "old"},
        "status": {"phase": "Running"},
    }
    desired = volcano_pg({"minMember": 3, "minResources": {"cpu": "1"}})
    got = updated_pod_group(existing, desired)
    assert got == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "test", "resourceVersion": "7"},
        "spec": {"minMember": 3, "minResources": {"cpu": "1"}},
        "status": {"phase": "Running"},
    }
    got["spec"]["minResources"]["cpu"] = "2"
    assert desired["spec"]["minResources"] == {"cpu": "1"}
    assert existing["spec"] == {"minMember": 1, "queue": "old"}
