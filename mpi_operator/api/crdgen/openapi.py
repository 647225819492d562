"""The Kubernetes half of the MPIJob CRD schema: schemas of the core group's OpenAPI v3
document (pod templates, label selectors, quantities) turned into structural CRD
schemas, every ``$ref`` inlined and what a CRD schema may not hold removed."""

from __future__ import annotations

from typing import Any, Protocol

#: Where kube-apiserver serves the core group's OpenAPI v3 document.
OPENAPI_PATH = "/openapi/v3/api/v1"
POD_TEMPLATE = "io.k8s.api.core.v1.PodTemplateSpec"
LABEL_SELECTOR = "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
REF_PREFIX = "#/components/schemas/"

Schema = dict[str, Any]

# Keys of a Kubernetes OpenAPI schema that a CRD schema keeps as they are. Anything
# else is dropped: $ref/allOf are inlined first; enum and most defaults go, so that the
# CRD accepts what the built-in types' validation may later reject, exactly as a
# controller-gen schema does (see _convert).
_KEEP = {
    "description",
    "type",
    "format",
    "properties",
    "additionalProperties",
    "items",
    "required",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
}

# A quantity as the Kubernetes grammar defines it: a signed decimal number followed
# by a binary-SI suffix, a decimal-SI suffix or a decimal exponent.
_NUMBER = r"([0-9]+(\.[0-9]*)?|\.[0-9]+)"
QUANTITY_PATTERN = rf"^[+-]?{_NUMBER}([KMGTPE]i|[numkMGTPE]|[eE][+-]?{_NUMBER})?$"


def int_or_string() -> Schema:
    return {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }


def embedded_object_meta() -> Schema:
    # An embedded ObjectMeta (a pod's or a volume claim's template) is kept whole, as
    # controller-gen does: the API server validates it when it creates the object.
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def quantity() -> Schema:
    return {**int_or_string(), "pattern": QUANTITY_PATTERN}


class OpenAPI:
    """The ``components.schemas`` of an OpenAPI v3 document, turned into CRD schemas."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.schemas: dict[str, Schema] = document["components"]["schemas"]

    def schema(self, name: str) -> Schema:
        return self._convert(self.schemas[name], (name,))

    def _resolve(self, ref: str) -> tuple[str, Schema]:
        if not ref.startswith(REF_PREFIX):
            raise ValueError(f"unsupported $ref {ref!r}")
        name = ref[len(REF_PREFIX) :]
        return name, self.schemas[name]

    def _convert(self, src: Schema, seen: tuple[str, ...]) -> Schema:
        src = dict(src)
        # `allOf: [{$ref}]` (v3's way to put a description next to a reference) and
        # a bare `$ref`: inline the target, the referring schema's keys winning.
        refs = [s["$ref"] for s in src.pop("allOf", []) if "$ref" in s]
        if "$ref" in src:
            refs.append(src.pop("$ref"))
        if len(refs) > 1:
            raise ValueError(f"more than one $ref in {seen[-1]}")
        if refs:
            name, target = self._resolve(refs[0])
            if name in seen:
                raise ValueError(f"recursive schema: {' -> '.join((*seen, name))}")
            if name == QUANTITY:
                out = quantity()
            elif name == INT_OR_STRING:
                out = int_or_string()
            elif name == OBJECT_META:
                out = embedded_object_meta()
            else:
                out = self._convert(target, (*seen, name))
            if "description" in src:
                out["description"] = src["description"]
            return out
        if src.get("format") == "int-or-string":
            out = int_or_string()
            if "description" in src:
                out["description"] = src["description"]
            return out
        out = {k: v for k, v in src.items() if k in _KEEP}
        if "properties" in out:
            out["properties"] = {
                k: self._convert(v, seen) for k, v in sorted(out["properties"].items())
            }
        if "additionalProperties" in out:
            out["additionalProperties"] = self._convert(out["additionalProperties"], seen)
        if "items" in out:
            out["items"] = self._convert(out["items"], seen)
        if "required" in out:
            out["required"] = sorted(out["required"])
        if out.get("x-kubernetes-list-type") == "map":
            _default_map_keys(out, src, self, seen)
        if "type" not in out and ("properties" in out or "additionalProperties" in out):
            out["type"] = "object"
        return out


def _default_map_keys(out: Schema, src: Schema, api: OpenAPI, seen: tuple[str, ...]) -> None:
    """A list-map key must be required or defaulted: keep the Kubernetes default of
    the keys that are optional (a port's protocol), the only defaults we keep."""
    items = out["items"]
    raw_items = src["items"]
    for key in out.get("x-kubernetes-list-map-keys", []):
        if key in items.get("required", []):
            continue
        raw = _property_source(api, raw_items, key)
        if raw is None or "default" not in raw:
            raise ValueError(f"list-map key {key!r} is neither required nor defaulted ({seen})")
        items["properties"][key]["default"] = raw["default"]


def _property_source(api: OpenAPI, raw: Schema, key: str) -> Schema | None:
    refs = [s["$ref"] for s in raw.get("allOf", []) if "$ref" in s]
    if "$ref" in raw:
        refs.append(raw["$ref"])
    for ref in refs:
        _, raw = api._resolve(ref)
    prop = raw.get("properties", {}).get(key)
    return prop if isinstance(prop, dict) else None


def pod_template(api: OpenAPI) -> Schema:
    out = api.schema(POD_TEMPLATE)
    if out["properties"]["metadata"].get("x-kubernetes-preserve-unknown-fields") is not True:
        raise ValueError("the pod template's metadata is not an embedded ObjectMeta")
    return out


class Requester(Protocol):
    """Something that makes one API call: ``(HTTP status, decoded body)``."""

    def request(self, method: str, path: str) -> tuple[int, Any]: ...


def fetch_document(cluster: Requester) -> tuple[dict[str, Any], str]:
    """The core OpenAPI document and the server's version, through ``cluster.request``."""
    status, document = cluster.request("GET", OPENAPI_PATH)
    if status != 200:
        raise RuntimeError(f"GET {OPENAPI_PATH}: {status} {document}")
    status, version = cluster.request("GET", "/version")
    if status != 200:
        raise RuntimeError(f"GET /version: {status} {version}")
    return document, str(version["gitVersion"])
