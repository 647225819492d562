"""Properties of the builders over random valid MPIJobs (hypothesis)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.api.v2beta1 import MPIJob, set_defaults, validate
from mpi_operator.builders.config import new_config_map
from mpi_operator.builders.launcher import new_launcher_job
from mpi_operator.builders.podgroup import new_pod_group
from mpi_operator.builders.service import new_job_service
from mpi_operator.builders.worker import new_worker, worker_replicas

names = st.from_regex(r"[a-z]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)
label_values = st.from_regex(r"[a-z0-9]{1,10}", fullmatch=True)
quantities = st.sampled_from(["1", "500m", "2", "1Gi", "512Mi", "100M", "0.5", "3e3"])
resources = st.fixed_dictionaries(
    {},
    optional={
        "requests": st.dictionaries(
            st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), quantities
        ),
        "limits": st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), quantities),
    },
)
containers = st.lists(
    st.fixed_dictionaries(
        {"name": names, "image": st.just("img")},
        optional={
            "command": st.lists(names, max_size=3),
            "args": st.lists(names, max_size=3),
            "env": st.lists(
                st.fixed_dictionaries({"name": names, "value": label_values}), max_size=2
            ),
            "resources": resources,
        },
    ),
    min_size=1,
    max_size=3,
)
pod_specs = st.fixed_dictionaries(
    {"containers": containers},
    optional={
        "hostNetwork": st.booleans(),
        "dnsConfig": st.fixed_dictionaries({}, optional={"searches": st.lists(names, max_size=2)}),
        "priorityClassName": st.sampled_from(["low", "high", "unknown"]),
        "schedulerName": names,
        "restartPolicy": st.sampled_from(["Always", "Never", "OnFailure"]),
        "nodeSelector": st.dictionaries(names, label_values, max_size=2),
    },
)
templates = st.fixed_dictionaries(
    {"spec": pod_specs},
    optional={
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "labels": st.dictionaries(names, label_values, max_size=3),
                "annotations": st.dictionaries(names, label_values, max_size=3),
            },
        )
    },
)
restart_policies = st.sampled_from(["Never", "OnFailure"])


@st.composite
def mpijobs(draw: st.DrawFn) -> dict[str, Any]:
    replica_specs: dict[str, Any] = {
        "Launcher": {"template": draw(templates), "restartPolicy": draw(restart_policies)}
    }
    if draw(st.booleans()):
        replica_specs["Worker"] = {
            "replicas": draw(st.integers(1, 8)),
            "template": draw(templates),
            "restartPolicy": draw(restart_policies),
        }
    run_policy: dict[str, Any] = {
        "cleanPodPolicy": draw(st.sampled_from(["None", "Running", "All"])),
        "suspend": draw(st.booleans()),
    }
    if draw(st.booleans()):
        run_policy["schedulingPolicy"] = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "minAvailable": st.integers(1, 10),
                    "queue": names,
                    "priorityClass": names,
                    "scheduleTimeoutSeconds": st.integers(0, 600),
                },
            )
        )
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": draw(names), "namespace": draw(names), "uid": "u"},
        "spec": {
            "slotsPerWorker": draw(st.integers(0, 16)),
            "runLauncherAsWorker": draw(st.booleans()),
            "mpiImplementation": draw(st.sampled_from(["OpenMPI", "Intel", "MPICH"])),
            "runPolicy": run_policy,
            "mpiReplicaSpecs": replica_specs,
        },
    }


def build_everything(job: MPIJob) -> list[Any]:
    priorities = {"low": 1, "high": 100}
    out: list[Any] = [new_job_service(job), new_config_map(job, worker_replicas(job))]
    for gang in (None, GangScheduling.volcano(), GangScheduling.scheduler_plugins("sp")):
        out += [new_worker(job, i, gang) for i in range(worker_replicas(job))]
        out.append(new_launcher_job(job, gang).job)
        if gang is not None:
            out.append(new_pod_group(job, gang, priorities))
    return out


PROPERTY_SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(mpijobs())
def test_valid_jobs_never_make_a_builder_raise(obj: dict[str, Any]) -> None:
    job = set_defaults(MPIJob.from_dict(obj))
    assume(not validate(job))
    build_everything(job)


@PROPERTY_SETTINGS
@given(mpijobs())
def test_builders_are_deterministic_and_leave_the_job_alone(obj: dict[str, Any]) -> None:
    job = set_defaults(MPIJob.from_dict(obj))
    before = copy.deepcopy(job.to_dict())
    first = build_everything(job)
    assert build_everything(job) == first
    assert job.to_dict() == before


@PROPERTY_SETTINGS
@given(mpijobs())
def test_round_trip_is_lossless(obj: dict[str, Any]) -> None:
    assert MPIJob.from_dict(copy.deepcopy(obj)).to_dict() == obj
