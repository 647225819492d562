"""The field errors of each MPIJob's last read object, checked once per object.

Most syncs come from a child's event (a pod scheduled, running, finished) and read the
very MPIJob object the previous sync read: the informer replaces an object on every
change and never edits one in place (client-go's rule for shared objects), so the same
object has the same errors. :class:`SpecChecks` keeps, per key, the last object checked
and its errors; a sync of an unchanged MPIJob skips the field checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mpi_operator.api.field_errors import FieldError


class SpecChecks:
    """Per MPIJob key: the object last checked (held, so that its identity cannot be
    reused) and its field errors."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[Any, tuple[FieldError, ...]]] = {}

    def errors(self, key: str, obj: Any, check: Callable[[], list[FieldError]]) -> list[FieldError]:
        """``check()``'s errors for ``obj``, run only when ``obj`` is not the object
        last checked for ``key``."""
        last = self._last.get(key)
        if last is not None and last[0] is obj:
            return list(last[1])
        errors = check()
        self._last[key] = (obj, tuple(errors))
        return errors

    def clear(self, key: str) -> None:
        self._last.pop(key, None)
