"""PodGroup builders: the cases of upstream's podgroup_test.go (whole PodGroups,
priority class, minAvailable, template decoration, the gang-scheduling flag)."""

from __future__ import annotations

import pytest
from podgroup_maker import (
    MIN_RESOURCES,
    OWNER,
    PLUGINS,
    VOLCANO,
    WORKLOAD,
    Obj,
    container,
    job,
    plugins_pg,
    replica,
    volcano_pg,
)

from mpi_operator.api.scheduling import GangKind, GangScheduling
from mpi_operator.api.v2beta1 import MPIJob
from mpi_operator.builders.kubeflow.podgroup import (
    calculate_min_available,
    calculate_priority_class_name,
    decorate_pod_template,
    new_pod_group,
    new_scheduler_plugins_pod_group,
    new_volcano_pod_group,
)

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


# -- pod template decoration (upstream TestDecoratePodTemplateSpec) ---------------


@pytest.mark.parametrize(
    ("template", "gang", "want"),
    [
        pytest.param(
            {},
            VOLCANO,
            {
                "metadata": {"annotations": {"scheduling.k8s.io/group-name": "test-mpijob"}},
                "spec": {"schedulerName": "volcano"},
            },
            id="volcano on an empty template",
        ),
        pytest.param(
            {},
            PLUGINS,
            {
                "metadata": {"labels": {"scheduling.x-k8s.io/pod-group": "test-mpijob"}},
                "spec": {"schedulerName": "default-scheduler"},
            },
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
            id="scheduler-plugins with the same scheduler already set",
        ),
        pytest.param(
            {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"schedulerName": "other", "containers": [{"name": "x"}]},
            },
            WORKLOAD,
            {
                "metadata": {"labels": {"a": "b"}},
                "spec": {
                    "schedulerName": "other",
                    "containers": [{"name": "x"}],
                    "schedulingGroup": {"podGroupName": "test-mpijob"},
                },
            },
            id="workload-api joins the group by name and keeps the scheduler",
        ),
    ],
)
def test_decorate_pod_template(template: Obj, gang: GangScheduling, want: Obj) -> None:
    snapshot = repr(template)
    assert decorate_pod_template(template, "test-mpijob", gang) == want
    assert repr(template) == snapshot


def test_decorated_template_copies_only_what_it_changes() -> None:
    """Copy-on-write: the objects on the way to the fields it sets are new (the input is
    left as it was, see above); the rest, the containers here, is shared, not copied."""
    template: Obj = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "x"}]}}
    out = decorate_pod_template(template, "j", PLUGINS)
    assert out["spec"] is not template["spec"]
    assert out["metadata"]["labels"] is not template["metadata"]["labels"]
    assert out["spec"]["containers"] is template["spec"]["containers"]
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
        ("workload-api", GangScheduling(GangKind.WORKLOAD_API, "")),
    ],
)  # fmt: skip
def test_gang_scheduling_from_flag(flag: str, want: GangScheduling | None) -> None:
    assert GangScheduling.from_flag(flag) == want


def test_gang_scheduling_api() -> None:
    assert VOLCANO.api_version == "scheduling.volcano.sh/v1beta1"
    assert (VOLCANO.group, VOLCANO.version) == ("scheduling.volcano.sh", "v1beta1")
    assert PLUGINS.api_version == "scheduling.x-k8s.io/v1alpha1"
    assert (PLUGINS.group, PLUGINS.version) == ("scheduling.x-k8s.io", "v1alpha1")
    assert WORKLOAD.api_version == "scheduling.k8s.io/v1alpha2"


@pytest.mark.parametrize(
    ("run_policy", "workers", "min_count"),
    [
        ({}, 3, 4),  # the workers and the launcher
        ({"schedulingPolicy": {"minAvailable": 2}}, 3, 2),
        ({"schedulingPolicy": {"queue": "q", "priorityClass": "high"}}, 1, 2),
    ],
)
def test_workload_api_pod_group(run_policy: Obj, workers: int, min_count: int) -> None:
    job = MPIJob.model_validate(
        {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "metadata": {"name": "pi", "namespace": "ns", "uid": "u1"},
            "spec": {
                "runPolicy": run_policy,
                "mpiReplicaSpecs": {
                    "Launcher": {"replicas": 1, "template": {}},
                    "Worker": {"replicas": workers, "template": {}},
                },
            },
        }
    )
    group = new_pod_group(job, WORKLOAD, {"high": 100})
    assert group["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    assert group["kind"] == "PodGroup"
    assert group["metadata"]["name"] == "pi"
    assert group["metadata"]["namespace"] == "ns"
    (owner,) = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "MPIJob",
        "pi",
        "u1",
        True,
    )
    # Only the gang policy: the API has no queue, priority or resources to carry.
    assert group["spec"] == {"schedulingPolicy": {"gang": {"minCount": min_count}}}
