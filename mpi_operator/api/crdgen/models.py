"""Our half of the MPIJob CRD schema: the pydantic models of
:mod:`mpi_operator.api.v2beta1.types`, walked field by field, with the descriptions,
enums, defaults, bounds and CEL rules of :mod:`.declarations`."""

from __future__ import annotations

import copy
import enum
import types
import typing
from typing import Any

from pydantic import BaseModel

from mpi_operator.api.v2beta1 import types as v2

from .declarations import (
    DATE_TIME,
    DEFAULTS,
    DESCRIPTIONS,
    ENUMS,
    INT64,
    ITEM_ENUMS,
    MAX_ITEMS,
    MAX_LENGTH,
    NON_NEGATIVE,
    NOT_REQUIRED,
    REQUIRED,
    VALIDATIONS,
)
from .openapi import LABEL_SELECTOR, OpenAPI, Schema, pod_template, quantity


def _unwrap_optional(tp: Any) -> Any:
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported union {tp}")
        return args[0]
    return tp


class ModelWalker:
    """Turns our pydantic models into CRD schemas."""

    def __init__(self, api: OpenAPI) -> None:
        self.api = api
        self.overrides: dict[str, Schema] = {
            "MPIJob.metadata": {"type": "object"},
            "ReplicaSpec.template": pod_template(api),
            "ReplicaStatus.labelSelector": api.schema(LABEL_SELECTOR),
            "SchedulingPolicy.minResources": {
                "type": "object",
                "additionalProperties": quantity(),
            },
        }

    def model(self, cls: type[BaseModel]) -> Schema:
        props: dict[str, Schema] = {}
        required: list[str] = []
        for name, field in cls.model_fields.items():
            key = field.alias or name
            where = f"{cls.__name__}.{key}"
            prop = self.field(where, field.annotation)
            if where in DESCRIPTIONS:
                prop["description"] = DESCRIPTIONS[where]
            props[key] = prop
            if (field.is_required() or where in REQUIRED) and where not in NOT_REQUIRED:
                required.append(key)
        out: Schema = {"type": "object", "properties": dict(sorted(props.items()))}
        if required:
            out["required"] = sorted(required)
        if cls.__name__ in DESCRIPTIONS:
            out["description"] = DESCRIPTIONS[cls.__name__]
        if cls.__name__ in VALIDATIONS:
            out["x-kubernetes-validations"] = copy.deepcopy(VALIDATIONS[cls.__name__])
        return out

    def field(self, where: str, annotation: Any) -> Schema:
        if where in self.overrides:
            out = copy.deepcopy(self.overrides[where])
        else:
            out = self.type(where, _unwrap_optional(annotation))
        if where in ENUMS:
            out["enum"] = list(ENUMS[where])
        if where in NON_NEGATIVE:
            out["minimum"] = 0
        if where in MAX_ITEMS:
            out["maxItems"] = MAX_ITEMS[where]
        if where in MAX_LENGTH:
            target = out["items"] if out.get("type") == "array" else out
            target["maxLength"] = MAX_LENGTH[where]
        if where in ITEM_ENUMS:
            out["items"]["enum"] = list(ITEM_ENUMS[where])
        if where in DEFAULTS:
            out["default"] = DEFAULTS[where]
        if where in VALIDATIONS:
            out["x-kubernetes-validations"] = copy.deepcopy(VALIDATIONS[where])
        return out

    def type(self, where: str, tp: Any) -> Schema:
        if typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return self.model(tp)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return {"type": "string"}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer", "format": "int64" if where in INT64 else "int32"}
        if tp is str:
            out: Schema = {"type": "string"}
            if where in DATE_TIME:
                out["format"] = "date-time"
            return out
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is list:
            return {"type": "array", "items": self.type(where, _unwrap_optional(args[0]))}
        if origin is dict and args[0] is str and args[1] is not Any:
            return {
                "type": "object",
                "additionalProperties": self.type(where, _unwrap_optional(args[1])),
            }
        raise TypeError(f"{where}: no schema for {tp!r}; add an override")


def status_schema(walker: ModelWalker) -> Schema:
    out = walker.model(v2.JobStatus)
    conditions = out["properties"]["conditions"]
    conditions["x-kubernetes-list-type"] = "map"
    conditions["x-kubernetes-list-map-keys"] = ["type"]
    labels = out["properties"]["replicaStatuses"]["additionalProperties"]["properties"]
    labels["labelSelector"]["x-kubernetes-map-type"] = "atomic"
    return out
