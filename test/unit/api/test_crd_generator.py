"""The CRD generator's (mpi_operator.api.crdgen) conversion of Kubernetes OpenAPI schemas, on small made-up
documents: references inlined, OpenAPI-only keys stripped, unsafe shapes refused."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.api import crdgen as gen

REF = "#/components/schemas/"


def _document() -> dict[str, Any]:
    return {
        "components": {
            "schemas": {
                "io.k8s.api.core.v1.Thing": {
                    "type": "object",
                    "x-kubernetes-group-version-kind": [{"group": "", "kind": "Thing"}],
                    "required": ["name", "a"],
                    "properties": {
                        "name": {"type": "string", "default": ""},
                        "a": {"type": "string", "enum": ["X", "Y"]},
                        "meta": {
                            "default": {},
                            "allOf": [
                                {"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
                            ],
                        },
                        "size": {"$ref": REF + "io.k8s.apimachinery.pkg.api.resource.Quantity"},
                        "port": {
                            "description": "a port",
                            "allOf": [
                                {"$ref": REF + "io.k8s.apimachinery.pkg.util.intstr.IntOrString"}
                            ],
                        },
                        "parts": {
                            "type": "array",
                            "items": {
                                "default": {},
                                "allOf": [{"$ref": REF + "io.k8s.api.core.v1.Part"}],
                            },
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["id", "kind"],
                            "x-kubernetes-patch-merge-key": "id",
                            "x-kubernetes-patch-strategy": "merge",
                        },
                    },
                },
                "io.k8s.api.core.v1.Part": {
                    "type": "object",
                    "required": ["id"],
                    "properties": {
                        "id": {"type": "integer", "format": "int32", "default": 0},
                        "kind": {"type": "string", "default": "K", "enum": ["K", "L"]},
                        "labels": {
                            "type": "object",
                            "additionalProperties": {"type": "string", "default": ""},
                        },
                    },
                },
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                },
                "io.k8s.apimachinery.pkg.api.resource.Quantity": {
                    "oneOf": [{"type": "string"}, {"type": "number"}]
                },
                "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
                    "format": "int-or-string",
                    "oneOf": [{"type": "integer"}, {"type": "string"}],
                },
            }
        }
    }


def test_openapi_conversion_inlines_and_strips() -> None:
    out = gen.OpenAPI(_document()).schema("io.k8s.api.core.v1.Thing")
    assert out == {
        "type": "object",
        "required": ["a", "name"],
        "properties": {
            "a": {"type": "string"},
            "meta": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "name": {"type": "string"},
            "parts": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["id", "kind"],
                "items": {
                    "type": "object",
                    "required": ["id"],
                    "properties": {
                        "id": {"type": "integer", "format": "int32"},
                        "kind": {"type": "string", "default": "K"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    },
                },
            },
            "port": {
                "description": "a port",
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
            },
            "size": {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
                "pattern": gen.QUANTITY_PATTERN,
            },
        },
    }


def test_openapi_conversion_rejects_undefaulted_optional_map_keys() -> None:
    doc = _document()
    del doc["components"]["schemas"]["io.k8s.api.core.v1.Part"]["properties"]["kind"]["default"]
    with pytest.raises(ValueError, match="neither required nor defaulted"):
        gen.OpenAPI(doc).schema("io.k8s.api.core.v1.Thing")


def test_openapi_conversion_rejects_recursion() -> None:
    doc = _document()
    doc["components"]["schemas"]["io.k8s.api.core.v1.Part"]["properties"]["inner"] = {
        "$ref": REF + "io.k8s.api.core.v1.Thing"
    }
    with pytest.raises(ValueError, match="recursive"):
        gen.OpenAPI(doc).schema("io.k8s.api.core.v1.Thing")
