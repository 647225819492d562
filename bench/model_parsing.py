"""How long parsing, defaulting and validating MPIJobs takes.

Run: ``python -m bench.model_parsing``. Prints one JSON line with the median
time of several rounds over 1,000 typical MPIJobs (a Horovod-style job with
resources, env, volumes and a status), and the per-job cost.
"""

from __future__ import annotations

import copy
import json
import statistics
import time
from typing import Any

from mpi_operator.api.v2beta1 import MPIJob, set_defaults, validate

JOBS = 1000
ROUNDS = 7


def typical_mpijob(i: int) -> dict[str, Any]:
    container = {
        "name": "trainer",
        "image": "horovod/horovod:0.28.1",
        "command": ["mpirun", "python", "/examples/tensorflow2_mnist.py"],
        "env": [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "EPOCHS", "value": "10"}],
        "resources": {"limits": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    }
    template = {
        "metadata": {"labels": {"team": "ml"}, "annotations": {"sidecar.istio.io/inject": "false"}},
        "spec": {
            "containers": [container],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        },
    }
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {
            "name": f"job-{i}",
            "namespace": "team-a",
            "uid": f"uid-{i}",
            "resourceVersion": str(1000 + i),
            "generation": 1,
        },
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 3},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": copy.deepcopy(template)},
                "Worker": {"replicas": 4, "template": copy.deepcopy(template)},
            },
        },
        "status": {
            "conditions": [
                {
                    "type": "Created",
                    "status": "True",
                    "reason": "MPIJobCreated",
                    "message": "MPIJob team-a/job created.",
                    "lastUpdateTime": "2026-11-21T00:00:00Z",
                    "lastTransitionTime": "2026-11-21T00:00:00Z",
                }
            ],
            "replicaStatuses": {"Launcher": {}, "Worker": {"active": 4}},
            "startTime": "2026-11-21T00:00:00Z",
        },
    }


def run(jobs: int = JOBS, repetitions: int = ROUNDS) -> dict[str, Any]:
    corpus = [typical_mpijob(i) for i in range(jobs)]
    rounds = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for obj in corpus:
            job = set_defaults(MPIJob.from_dict(obj))
            if validate(job):
                raise AssertionError("the benchmark corpus must be valid")
        rounds.append(time.perf_counter() - start)
    median = statistics.median(rounds)
    return {
        "benchmark": "model_parsing",
        "jobs": jobs,
        "median_seconds": round(median, 4),
        "per_job_microseconds": round(median / jobs * 1e6, 1),
        "rounds": [round(r, 4) for r in rounds],
    }


if __name__ == "__main__":
    print(json.dumps(run()))
