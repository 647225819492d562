"""A fluent maker of MPIJobs for builder tests, in the style of JobSet's test wrappers."""

from __future__ import annotations

import copy
from typing import Any

from mpi_operator.api.v2beta1 import MPIJob, set_defaults

#: The controller reference of the children of the default job (``foo``).
OWNER = {
    "apiVersion": "kubeflow.org/v2beta1",
    "kind": "MPIJob",
    "name": "foo",
    "uid": "uid-foo",
    "controller": True,
    "blockOwnerDeletion": True,
}


class MakeMPIJob:
    def __init__(self, name: str = "foo", namespace: str = "bar") -> None:
        self._obj: dict[str, Any] = {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
            "spec": {
                "mpiReplicaSpecs": {
                    "Launcher": {"template": {"spec": {"containers": [{"name": "main"}]}}},
                    "Worker": {
                        "replicas": 2,
                        "template": {"spec": {"containers": [{"name": "main"}]}},
                    },
                }
            },
        }

    @property
    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._obj["spec"]
        return spec

    def replica(self, role: str) -> dict[str, Any]:
        replica: dict[str, Any] = self.spec["mpiReplicaSpecs"][role]
        return replica

    def set(self, **fields: Any) -> MakeMPIJob:
        self.spec.update(fields)
        return self

    def run_policy(self, **fields: Any) -> MakeMPIJob:
        self.spec.setdefault("runPolicy", {}).update(fields)
        return self

    def workers(self, replicas: int | None) -> MakeMPIJob:
        if replicas is None:
            del self.spec["mpiReplicaSpecs"]["Worker"]
        else:
            self.replica("Worker")["replicas"] = replicas
        return self

    def pod_spec(self, role: str, **fields: Any) -> MakeMPIJob:
        self.replica(role)["template"]["spec"].update(fields)
        return self

    def container(self, role: str, **fields: Any) -> MakeMPIJob:
        self.replica(role)["template"]["spec"]["containers"][0].update(fields)
        return self

    def template_metadata(self, role: str, **fields: Any) -> MakeMPIJob:
        self.replica(role)["template"].setdefault("metadata", {}).update(fields)
        return self

    def obj(self) -> MPIJob:
        return set_defaults(MPIJob.from_dict(copy.deepcopy(self._obj)))
