"""Field errors in the shape Kubernetes reports them.

A user who already reads ``kubectl`` errors and the reference operator's
``ValidationError`` events sees the same text from us: ``<path>: <type>:
<value>: <detail>``, and a list of them aggregated as ``[a, b]`` with
duplicates dropped.
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
            text = f"{self.type}: {json.dumps(self.bad_value, ensure_ascii=False)}"
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
