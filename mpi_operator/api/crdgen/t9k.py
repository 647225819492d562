"""The T9k MPIJob CRD (``crd/t9k/batch.tensorstack.dev_mpijobs.yaml``), generated from
the models of :mod:`mpi_operator.api.t9k.types`: every field's description is the
``description`` of its pydantic field, every object's the docstring of its model, so
``kubectl explain mpijobs.batch.tensorstack.dev.spec`` documents what the operator
reads. Pod templates are kept whole (``x-kubernetes-preserve-unknown-fields``): no
OpenAPI document is needed, so the file is generated without a cluster."""

from __future__ import annotations

import inspect
import typing
from typing import Any

from pydantic import BaseModel

from mpi_operator.api.limits import MAX_WORKER_REPLICAS
from mpi_operator.api.t9k import types as t9k
from mpi_operator.api.t9k.validation import MAX_PRIORITY

from .crd import render
from .openapi import Schema

HEADER_SOURCE = "mpi_operator/api/t9k/types.py"

# The only names a bare `kubectl get` resolves to this CRD besides the plural and
# singular, which it shares with kubeflow.org's MPIJob.
SHORT_NAMES = ["t9kmpijob", "tmj"]
CATEGORIES = ["t9k"]

_ANY = {"x-kubernetes-preserve-unknown-fields": True}
OVERRIDES: dict[str, Schema] = {
    "MPIJob.metadata": {"type": "object"},
    "WorkerSpec.template": {"type": "object", **_ANY},
    # A string or a boolean: validated by the operator, which names the field.
    "RunPolicy.cleanUpWorkers": dict(_ANY),
}
BOUNDS: dict[str, Schema] = {
    "WorkerSpec.replicas": {"format": "int32", "minimum": 1, "maximum": MAX_WORKER_REPLICAS},
    "T9kScheduler.priority": {"minimum": 0, "maximum": MAX_PRIORITY},
    "JobCondition.lastTransitionTime": {"format": "date-time"},
}
# Only what the API server must refuse; the operator reports the rest as field errors.
REQUIRED = {"MPIJobSpec": ["worker"]}

PRINTER_COLUMNS: list[Schema] = [
    {
        "name": "PHASE",
        "type": "string",
        "description": "Phase of the job.",
        "jsonPath": ".status.phase",
    },
    {
        "name": "WORKERS",
        "type": "integer",
        "description": "Desired worker pods.",
        "jsonPath": ".spec.worker.replicas",
    },
    {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


class T9kWalker:
    """Our T9k models as a structural schema."""

    def model(self, cls: type[BaseModel]) -> Schema:
        props: dict[str, Schema] = {}
        for name, field in cls.model_fields.items():
            key = field.alias or name
            where = f"{cls.__name__}.{key}"
            prop = dict(OVERRIDES[where]) if where in OVERRIDES else self.field(field.annotation)
            prop.update(BOUNDS.get(where, {}))
            if field.description:
                prop["description"] = field.description
            props[key] = prop
        out: Schema = {"type": "object", "properties": dict(sorted(props.items()))}
        if cls.__name__ in REQUIRED:
            out["required"] = REQUIRED[cls.__name__]
        doc = cls.__dict__.get("__doc__")
        if doc:
            out["description"] = inspect.cleandoc(doc).replace("\n", " ")
        return out

    def field(self, annotation: Any) -> Schema:
        tp = _optional(annotation)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return self.model(tp)
        if tp is int:
            return {"type": "integer"}
        if tp is bool:
            return {"type": "boolean"}
        if tp is str:
            return {"type": "string"}
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is list:
            return {"type": "array", "items": self.field(args[0])}
        if origin is dict and args[0] is str:
            return {"type": "object", "additionalProperties": self.field(args[1])}
        raise TypeError(f"no schema for {tp!r}; add an override")


def _optional(annotation: Any) -> Any:
    members = typing.get_args(annotation)
    args = [a for a in members if a is not type(None)]
    if type(None) in members and len(args) == 1:
        return args[0]
    return annotation


def build_t9k_crd() -> Schema:
    root = T9kWalker().model(t9k.MPIJob)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{t9k.PLURAL}.{t9k.GROUP}"},
        "spec": {
            "group": t9k.GROUP,
            "names": {
                "kind": t9k.KIND,
                "listKind": f"{t9k.KIND}List",
                "plural": t9k.PLURAL,
                "singular": t9k.KIND.lower(),
                "shortNames": list(SHORT_NAMES),
                "categories": list(CATEGORIES),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": t9k.VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": root},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [dict(c) for c in PRINTER_COLUMNS],
                }
            ],
        },
    }


T9K_HEADER = """\
# Code generated by hack/generate_crd.py (make crd) from {source}. DO NOT EDIT.
# T9k-style MPIJob CRD (batch.tensorstack.dev/v1beta1), served by mpi-operator's T9k
# controller. Pod templates are kept whole; runPolicy.cleanUpWorkers accepts a string
# or a boolean (validated by the operator). Short names {short}: the plural and
# singular are shared with kubeflow.org's MPIJob, so name it
# `kubectl get mpijobs.batch.tensorstack.dev` (or `kubectl get tmj`).
"""


def generate_t9k() -> str:
    body = render(build_t9k_crd(), "")
    body = body[body.index("---\n") :]
    return T9K_HEADER.format(source=HEADER_SOURCE, short=", ".join(SHORT_NAMES)) + body
