"""The shape of a pod template where a CRD leaves it free: a T9k template is kept whole
(``x-kubernetes-preserve-unknown-fields``), a Kubeflow template's ``metadata`` too.

The builders read and extend some of its parts (labels, annotations, containers and
their env, volume mounts and resources, volumes, the DNS config). Those must have
their Kubernetes types, or the job is refused with a field error naming them: the API
server would only ever see the pods we could not build, so without this check a
``labels: [a]`` became a sync that failed forever with a Python TypeError."""

from __future__ import annotations

from typing import Any

from mpi_operator.api.field_errors import FieldError, invalid

_OBJECT = "must be an object"
_LIST = "must be a list"
_OBJECTS = "must be a list of objects"
_STRINGS = "must be a list of strings"
_STRING = "must be a string"
_STRING_MAP = "must be a map of strings to strings"

#: Lists of objects in a container that the builders append to or read.
_CONTAINER_OBJECT_LISTS = ("env", "envFrom", "volumeMounts", "ports")
_CONTAINER_STRING_LISTS = ("command", "args")


def template_errors(template: Any, path: str) -> list[FieldError]:
    """Field errors of the pod template at ``path`` (empty when its shape is right)."""
    if not isinstance(template, dict):
        return [invalid(path, template, _OBJECT)]
    errors: list[FieldError] = []
    metadata = template.get("metadata")
    if metadata is not None:
        if isinstance(metadata, dict):
            for key in ("labels", "annotations"):
                errors += _string_map_errors(metadata.get(key), f"{path}.metadata.{key}")
        else:
            errors.append(invalid(f"{path}.metadata", metadata, _OBJECT))
    spec = template.get("spec")
    if spec is None:
        return errors
    if not isinstance(spec, dict):
        return [*errors, invalid(f"{path}.spec", spec, _OBJECT)]
    return errors + _pod_spec_errors(spec, f"{path}.spec")


def _pod_spec_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        if containers is None:
            continue
        if not isinstance(containers, list):
            errors.append(invalid(f"{path}.{key}", containers, _LIST))
            continue
        for i, container in enumerate(containers):
            errors += _container_errors(container, f"{path}.{key}[{i}]")
    errors += _object_list_errors(spec.get("volumes"), f"{path}.volumes")
    errors += _string_map_errors(spec.get("nodeSelector"), f"{path}.nodeSelector")
    for key in ("schedulerName", "priorityClassName", "restartPolicy"):
        value = spec.get(key)
        if value is not None and not isinstance(value, str):
            errors.append(invalid(f"{path}.{key}", value, _STRING))
    host_network = spec.get("hostNetwork")
    if host_network is not None and not isinstance(host_network, bool):
        errors.append(invalid(f"{path}.hostNetwork", host_network, "must be a boolean"))
    dns = spec.get("dnsConfig")
    if dns is not None:
        if isinstance(dns, dict):
            errors += _string_list_errors(dns.get("searches"), f"{path}.dnsConfig.searches")
        else:
            errors.append(invalid(f"{path}.dnsConfig", dns, _OBJECT))
    return errors


def _container_errors(container: Any, path: str) -> list[FieldError]:
    if not isinstance(container, dict):
        return [invalid(path, container, _OBJECT)]
    errors: list[FieldError] = []
    name = container.get("name")
    if name is not None and not isinstance(name, str):
        errors.append(invalid(f"{path}.name", name, _STRING))
    for key in _CONTAINER_OBJECT_LISTS:
        errors += _object_list_errors(container.get(key), f"{path}.{key}")
    for key in _CONTAINER_STRING_LISTS:
        errors += _string_list_errors(container.get(key), f"{path}.{key}")
    resources = container.get("resources")
    if resources is not None:
        if isinstance(resources, dict):
            for key in ("limits", "requests"):
                value = resources.get(key)
                if value is not None and not isinstance(value, dict):
                    errors.append(invalid(f"{path}.resources.{key}", value, _OBJECT))
        else:
            errors.append(invalid(f"{path}.resources", resources, _OBJECT))
    return errors


def _string_map_errors(value: Any, path: str) -> list[FieldError]:
    if value is None:
        return []
    # A null value decodes to "" in Go (the reference takes it), so it passes too.
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in value.items()
    ):
        return [invalid(path, value, _STRING_MAP)]
    return []


def _object_list_errors(value: Any, path: str) -> list[FieldError]:
    return _list_errors(value, path, dict, _OBJECTS)


def _string_list_errors(value: Any, path: str) -> list[FieldError]:
    return _list_errors(value, path, str, _STRINGS)


def _list_errors(value: Any, path: str, item: type, detail: str) -> list[FieldError]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(x, item) for x in value):
        return [invalid(path, value, detail)]
    return []
