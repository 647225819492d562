"""Values nested any number of levels deep, built without recursion: the API's error
paths must report them as one field error whatever the depth (test/unit/api,
test/unit/t9k, test/unit/seam)."""

from __future__ import annotations

from typing import Any


def nested_object(depth: int) -> Any:
    """``{"a": {"a": ... "leaf"}}``, ``depth`` objects deep."""
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def nested_list(depth: int) -> Any:
    """``[[... "leaf"]]``, ``depth`` lists deep."""
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value
