"""The field errors of each MPIJob's spec, checked once per version of the spec.

Most syncs read an MPIJob whose spec the previous sync already checked: a child's event
(a pod scheduled, running, finished) brings the very object back, and our own status
writes bring a new object with the same spec. The API server counts the spec's versions
in ``metadata.generation``: with the status subresource (both CRDs have it), a write
that changes anything but the metadata and the status raises it, and nothing else does.
The checks read only the spec, the name and the namespace (and the process's options),
so one ``(uid, generation)`` has one set of errors. An object without both (never from
the API server) is checked once per object: the informer replaces an object on every
change and never edits one in place (client-go's rule for shared objects).
:class:`SpecChecks` keeps, per key, the last version checked and its errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mpi_operator.api.field_errors import FieldError


def spec_version(obj: Any) -> tuple[str, int] | None:
    """The object's ``(uid, generation)``, or None when it lacks either."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return None
    uid, generation = meta.get("uid"), meta.get("generation")
    if not uid or not isinstance(generation, int) or isinstance(generation, bool):
        return None
    return str(uid), generation


class SpecChecks:
    """Per MPIJob key: the object last checked (held, so that its identity cannot be
    reused), its spec's version and its field errors."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[Any, tuple[str, int] | None, tuple[FieldError, ...]]] = {}

    def errors(self, key: str, obj: Any, check: Callable[[], list[FieldError]]) -> list[FieldError]:
        """``check()``'s errors for ``obj``, run only when neither ``obj`` nor its
        spec's version is the one last checked for ``key``."""
        version = spec_version(obj)
        last = self._last.get(key)
        if last is not None and (last[0] is obj or (version is not None and last[1] == version)):
            return list(last[2])
        errors = check()
        self._last[key] = (obj, version, tuple(errors))
        return errors

    def clear(self, key: str) -> None:
        self._last.pop(key, None)
