"""Field errors in the shape Kubernetes reports them.

A user who already reads ``kubectl`` errors and the reference operator's
``ValidationError`` events sees the same text from us: ``<path>: <type>:
<value>: <detail>``, and a list of them aggregated as ``[a, b]`` with
duplicates dropped.

The bad value comes from the user and may be any JSON, a free-form field (T9k's
``cleanUpWorkers``, a template's metadata) nested a thousand levels deep included.
``json.dumps`` recurses once per level, and past about 1,000 levels it raises
RecursionError instead of an error message: the sync then failed again on every retry
and the user never heard why. So a value nested deeper than :data:`MAX_PRINTED_DEPTH`
is described, not printed; the depth is measured without recursion.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ErrorType(StrEnum):
    REQUIRED = "Required value"
    INVALID = "Invalid value"
    NOT_SUPPORTED = "Unsupported value"
    TOO_LONG = "Too long"


# Types whose bad value is printed, as Kubernetes prints it, without quotes.
_PLAIN_TYPES = (bool, int, float)
#: Objects and lists of a bad value that an error prints (the value itself is level 1);
#: the same bound as a free-form field's (``limits.MAX_NESTING_DEPTH``), far from
#: where ``json.dumps`` runs out of stack.
MAX_PRINTED_DEPTH = 32


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` holds objects and lists more than ``limit`` levels deep (a
    dict or list ``value`` is level 1). Iterative, so any depth is safe; it stops at
    the first level past ``limit``."""
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def printed_value(value: Any) -> str:
    """The JSON of ``value`` as an error prints it, or for a value nested too deeply to
    print (or to encode at all), a description naming the limit."""
    if nested_deeper_than(value, MAX_PRINTED_DEPTH):
        kind = "an object" if isinstance(value, dict) else "a list"
        return f"<{kind} nested more than {MAX_PRINTED_DEPTH} levels deep, not printed>"
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class FieldError:
    type: ErrorType
    field: str
    bad_value: Any = None
    detail: str = ""

    def body(self) -> str:
        if self.type in (ErrorType.REQUIRED, ErrorType.TOO_LONG):
            text = str(self.type)  # as Kubernetes: a value too long is not printed
        elif isinstance(self.bad_value, bool):
            text = f"{self.type}: {'true' if self.bad_value else 'false'}"
        elif isinstance(self.bad_value, _PLAIN_TYPES):
            text = f"{self.type}: {self.bad_value}"
        else:
            text = f"{self.type}: {printed_value(self.bad_value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def required(field: str, detail: str) -> FieldError:
    return FieldError(ErrorType.REQUIRED, field, None, detail)


def too_long(field: str, detail: str) -> FieldError:
    return FieldError(ErrorType.TOO_LONG, field, None, detail)


def invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, field, value, detail)


def not_supported(field: str, value: Any, valid: Iterable[str]) -> FieldError:
    values = ", ".join(json.dumps(v) for v in valid)
    return FieldError(ErrorType.NOT_SUPPORTED, field, value, f"supported values: {values}")


def aggregate(errors: Sequence[FieldError]) -> str:
    """One message for many errors, deduplicated, as Kubernetes aggregates them."""
    messages = list(dict.fromkeys(str(e) for e in errors))
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"


class InvalidObjectError(ValueError):
    """Raised with the field errors that make an object unusable."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        self.errors = list(errors)
        super().__init__(aggregate(self.errors))
