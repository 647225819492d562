"""Size limits: the worker cap of both APIs, and the ConfigMap size computed without
building it, which must equal the builders' output byte for byte."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster.sample_jobs import pi_mpijob
from mpi_operator.api import t9k, v2beta1
from mpi_operator.api.limits import (
    CONFIG_MAP_DATA_LIMIT,
    MAX_WORKER_REPLICAS,
    ConfigShape,
    index_digits,
)
from mpi_operator.api.t9k.validation import config_shape as t9k_shape
from mpi_operator.api.v2beta1.validation import config_shape as kubeflow_shape
from mpi_operator.builders.kubeflow.config import new_config_map
from mpi_operator.builders.t9k.config import new_config_map as new_t9k_config_map

COUNTS = (0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 1234)


def data_bytes(config_map: dict[str, Any]) -> int:
    """What kube-apiserver counts against the limit: the values' bytes."""
    return sum(len(v.encode()) for v in config_map["data"].values())


def kubeflow_job(
    name: str = "pi",
    namespace: str = "default",
    workers: int = 2,
    slots: int | None = 1,
    implementation: str = "OpenMPI",
    launcher_as_worker: bool = False,
) -> v2beta1.MPIJob:
    obj = pi_mpijob(name, workers=workers)
    obj["metadata"]["namespace"] = namespace
    obj["spec"]["slotsPerWorker"] = slots
    obj["spec"]["mpiImplementation"] = implementation
    obj["spec"]["runLauncherAsWorker"] = launcher_as_worker
    return v2beta1.set_defaults(v2beta1.parse(obj))


def t9k_job(
    name: str = "pi", namespace: str = "default", workers: int = 2, gpus: Any = None
) -> t9k.MPIJob:
    container: dict[str, Any] = {"name": "mpi-worker", "image": "img"}
    if gpus is not None:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    obj = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "worker": {
                "replicas": workers,
                "cmd": ["python", "train.py"],
                "template": {"spec": {"containers": [container]}},
            }
        },
    }
    return t9k.set_defaults(t9k.parse(obj))


def running(job: v2beta1.MPIJob, count: int) -> list[dict[str, Any]]:
    return [
        {"metadata": {"name": f"{job.name}-worker-{i}", "namespace": job.namespace}}
        for i in range(count)
    ]


@pytest.mark.parametrize("count", [*range(0, 130), 999, 1000, 1001, 10**5, 123456])
def test_index_digits(count: int) -> None:
    assert index_digits(count) == len("".join(str(i) for i in range(count)))


@pytest.mark.parametrize(
    ("name", "namespace", "slots", "implementation", "launcher_as_worker", "domain"),
    list(
        itertools.product(
            ["pi", "a-rather-long-job-name-of-forty-chars-xx"],
            ["default", "ns-x"],
            [1, 16, None],
            ["OpenMPI", "Intel", "MPICH", "Unknown"],
            [False, True],
            ["", "cluster.local"],
        )
    ),
)
def test_kubeflow_size_is_the_builders_exactly(
    name: str,
    namespace: str,
    slots: int | None,
    implementation: str,
    launcher_as_worker: bool,
    domain: str,
) -> None:
    job = kubeflow_job(name, namespace, 2, slots, implementation, launcher_as_worker)
    shape = kubeflow_shape(job, domain)
    for count in COUNTS:
        # The ConfigMap is largest once every worker runs (discover_hosts.sh lists them).
        built = new_config_map(job, count, running(job, count), domain)
        assert shape.size(count) == data_bytes(built), count


@pytest.mark.parametrize(
    ("name", "namespace", "gpus"),
    list(itertools.product(["pi", "x" * 40], ["default", "ns-x"], [None, 1, 8, "1500m", 1000])),
)
def test_t9k_size_is_the_builders_exactly(name: str, namespace: str, gpus: Any) -> None:
    for count in COUNTS:
        job = t9k_job(name, namespace, count, gpus)
        assert t9k_shape(job).size(count) == data_bytes(new_t9k_config_map(job)), count


@pytest.mark.parametrize(
    "shape",
    [
        ConfigShape(fixed=10, per_worker=60, index_times=2),
        ConfigShape(fixed=0, per_worker=30, index_times=1),
        ConfigShape(fixed=0, per_worker=5, index_times=1),  # the cap binds first
        ConfigShape(fixed=CONFIG_MAP_DATA_LIMIT + 1, per_worker=1, index_times=1),
    ],
)
def test_largest_fitting_is_the_boundary(shape: ConfigShape) -> None:
    fits = shape.largest_fitting()
    if fits == 0:
        assert shape.size(0) > CONFIG_MAP_DATA_LIMIT
    elif fits == MAX_WORKER_REPLICAS:
        assert shape.size(fits) <= CONFIG_MAP_DATA_LIMIT
    else:
        assert shape.size(fits) <= CONFIG_MAP_DATA_LIMIT < shape.size(fits + 1)


def test_kubeflow_40000_workers_name_the_field_and_the_largest_count() -> None:
    job = kubeflow_job("big", "default", workers=40_000)
    assert v2beta1.validate(job) == []  # the reference's rules have no limit
    [error] = v2beta1.limit_errors(job)
    fits = kubeflow_shape(job).largest_fitting()
    assert error.field == "spec.mpiReplicaSpecs[Worker].replicas"
    assert f"at most {fits} workers fit" in str(error)
    built = new_config_map(job, fits, running(job, fits))
    assert data_bytes(built) <= CONFIG_MAP_DATA_LIMIT
    more = new_config_map(job, fits + 1, running(job, fits + 1))
    assert data_bytes(more) > CONFIG_MAP_DATA_LIMIT
    job = kubeflow_job("big", "default", workers=fits)
    assert v2beta1.limit_errors(job) == []


def test_cluster_domain_counts() -> None:
    job = kubeflow_job("big", "default", workers=12_000)
    assert v2beta1.limit_errors(job) == []
    assert v2beta1.limit_errors(job, "a-long-cluster-domain.example.com") != []


@pytest.mark.parametrize(
    ("workers", "message"),
    [
        (MAX_WORKER_REPLICAS + 1, f"must be no more than {MAX_WORKER_REPLICAS}"),
        (2**31 - 1, f"must be no more than {MAX_WORKER_REPLICAS}"),
        (40_000, "workers fit with this job's"),
    ],
)
def test_both_apis_share_the_cap(workers: int, message: str) -> None:
    [kubeflow] = v2beta1.limit_errors(kubeflow_job(workers=workers))
    assert kubeflow.field == "spec.mpiReplicaSpecs[Worker].replicas"
    assert message in str(kubeflow)
    [t9k_error] = [e for e in t9k.validate(t9k_job(workers=workers)) if "replicas" in e.field]
    assert t9k_error.field == "spec.worker.replicas"
    assert message in str(t9k_error)


def test_t9k_largest_count_fits_and_one_more_does_not() -> None:
    fits = t9k_shape(t9k_job("big", "default", 1, 8)).largest_fitting()
    assert t9k.validate(t9k_job("big", "default", fits, 8)) == []
    [error] = t9k.validate(t9k_job("big", "default", fits + 1, 8))
    assert f"at most {fits} workers fit" in str(error)
    assert data_bytes(new_t9k_config_map(t9k_job("big", "default", fits + 1, 8))) > (
        CONFIG_MAP_DATA_LIMIT
    )


def test_the_t9k_crd_has_the_cap_as_maximum() -> None:
    path = (
        Path(__file__).resolve().parents[3] / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"
    )
    crd = yaml.safe_load(path.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    replicas = spec["properties"]["worker"]["properties"]["replicas"]
    assert (replicas["minimum"], replicas["maximum"]) == (1, MAX_WORKER_REPLICAS)
