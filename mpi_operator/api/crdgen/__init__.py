"""The MPIJob CRD (``crd/kubeflow.org_mpijobs.yaml``), generated from our pydantic
models and the Kubernetes OpenAPI document; ``hack/generate_crd.py`` is the command."""

from .crd import build_crd, generate, render
from .openapi import OPENAPI_PATH, QUANTITY_PATTERN, OpenAPI, fetch_document

__all__ = [
    "OPENAPI_PATH",
    "QUANTITY_PATTERN",
    "OpenAPI",
    "build_crd",
    "fetch_document",
    "generate",
    "render",
]
