"""Decoding API answers when orjson refuses part of them.

orjson refuses JSON nested deeper than 1,024 levels, and kube-apiserver stores custom
resources whose free-form fields (a pod template's metadata, say) are nested deeper
than that. One such object must not make a whole list page, or a watch stream,
unreadable: client-go decodes it (Go's limit is 10,000) and the reference operator runs
every other MPIJob.

So when a list page fails to decode as a whole, its items are decoded one by one: by the
standard library's decoder, which says where each ends (C speed; it stops at Python's
recursion limit), and the one it refuses is delimited by a small structural scanner
(strings and brackets only; no values built) and given to orjson alone. An item orjson
refuses alone becomes an :class:`Undecodable`: its
identity (kind, namespace, name, uid, resourceVersion) is read by the same scanner from
its top-level ``metadata`` member, which works however deep the offending field is and
whatever order the keys come in (Go sorts the keys of a custom resource, so
``managedFields``, which mirrors the deep field, comes before ``name``). A watch line is
handled the same way: its ``object`` is decoded alone, or identified.

The scanner is iterative (no recursion limit). All of this runs only on the failure
path: a page of 500 items of 10 kB with one deep item takes about 0.1 s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

# A JSON string, escapes included ("unrolled" so that long strings match quickly).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
# What matters to find a container's end: strings (they may hold brackets) and brackets.
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)
# A number, true, false or null.
_SCALAR = re.compile(r"[^,\]}\s]+")
_SPACE = re.compile(r"[ \t\n\r]*")
_OPEN = frozenset("[{")
_CLOSE = frozenset("]}")
_STDLIB = json.JSONDecoder()


class MalformedJSON(ValueError):
    """The scanner found something that is not JSON."""


@dataclass(frozen=True)
class Undecodable:
    """An object the decoder refused, with whatever of its identity could be read."""

    reason: str
    kind: str | None = None
    api_version: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    #: The watch event's type (ADDED, MODIFIED, DELETED); None for a listed item.
    event_type: str | None = None

    @property
    def key(self) -> str | None:
        """The object's cache key (``namespace/name``, or ``name``), when known."""
        if not self.name:
            return None
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


# -- the scanner ---------------------------------------------------------------
def _skip_space(buf: str, pos: int) -> int:
    match = _SPACE.match(buf, pos)
    return match.end() if match else pos


def _char_at(buf: str, pos: int) -> str:
    if pos >= len(buf):
        raise MalformedJSON(f"unexpected end at {pos}")
    return buf[pos]


def value_end(buf: str, pos: int) -> int:
    """Where the JSON value that starts at ``pos`` ends (exclusive)."""
    first = _char_at(buf, pos)
    if first == '"':
        match = _STRING.match(buf, pos)
        if match is None:
            raise MalformedJSON(f"unterminated string at {pos}")
        return match.end()
    if first in _OPEN:
        depth = 0
        for match in _STRUCTURE.finditer(buf, pos):
            char = buf[match.start()]
            if char in _OPEN:
                depth += 1
            elif char in _CLOSE:
                depth -= 1
                if depth == 0:
                    return match.end()
        raise MalformedJSON(f"unterminated container at {pos}")
    match = _SCALAR.match(buf, pos)
    if match is None:
        raise MalformedJSON(f"no value at {pos}")
    return match.end()


def _separator(buf: str, pos: int, close: str) -> tuple[int, bool]:
    """After a member: the position of the next one, and whether there is one."""
    pos = _skip_space(buf, pos)
    char = _char_at(buf, pos)
    if char == ",":
        return _skip_space(buf, pos + 1), True
    if char == close:
        return pos + 1, False
    raise MalformedJSON(f"expected ',' or {close!r} at {pos}")


def object_members(buf: str, pos: int) -> Iterator[tuple[str, int, int]]:
    """``(key, start, end)`` of each member of the object that starts at ``pos``."""
    pos = _skip_space(buf, pos)
    if _char_at(buf, pos) != "{":
        raise MalformedJSON(f"expected an object at {pos}")
    pos = _skip_space(buf, pos + 1)
    if _char_at(buf, pos) == "}":
        return
    more = True
    while more:
        match = _STRING.match(buf, pos)
        if match is None:
            raise MalformedJSON(f"expected a key at {pos}")
        key = orjson.loads(match.group())
        pos = _skip_space(buf, match.end())
        if _char_at(buf, pos) != ":":
            raise MalformedJSON(f"expected ':' at {pos}")
        start = _skip_space(buf, pos + 1)
        end = value_end(buf, start)
        yield key, start, end
        pos, more = _separator(buf, end, "}")


def array_elements(buf: str, pos: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each element of the array that starts at ``pos``."""
    pos = _skip_space(buf, pos)
    if _char_at(buf, pos) != "[":
        raise MalformedJSON(f"expected an array at {pos}")
    pos = _skip_space(buf, pos + 1)
    if _char_at(buf, pos) == "]":
        return
    more = True
    while more:
        end = value_end(buf, pos)
        yield pos, end
        pos, more = _separator(buf, end, "]")


# -- identity of an undecodable object -------------------------------------------
def _string_members(buf: str, pos: int, wanted: frozenset[str]) -> dict[str, str]:
    """The members of the object at ``pos`` named in ``wanted`` whose values are strings."""
    found: dict[str, str] = {}
    for key, start, end in object_members(buf, pos):
        if key in wanted and buf[start] == '"':
            value = orjson.loads(buf[start:end])
            if isinstance(value, str):
                found[key] = value
    return found


_TOP = frozenset({"kind", "apiVersion"})
_META = frozenset({"namespace", "name", "uid", "resourceVersion"})


def identify(buf: str, pos: int, reason: str, event_type: str | None = None) -> Undecodable:
    """What can be read of the identity of the object at ``pos`` (nothing if it is not
    even well-formed JSON)."""
    top: dict[str, str] = {}
    meta: dict[str, str] = {}
    try:
        for key, start, end in object_members(buf, pos):
            if key in _TOP and buf[start] == '"':
                value = orjson.loads(buf[start:end])
                if isinstance(value, str):
                    top[key] = value
            elif key == "metadata" and buf[start] == "{":
                meta = _string_members(buf, start, _META)
    except ValueError:
        pass  # MalformedJSON, or a string orjson refused: keep what was read
    return Undecodable(
        reason=reason,
        kind=top.get("kind"),
        api_version=top.get("apiVersion"),
        namespace=meta.get("namespace"),
        name=meta.get("name"),
        uid=meta.get("uid"),
        resource_version=meta.get("resourceVersion"),
        event_type=event_type,
    )


# -- list pages and watch lines ---------------------------------------------------
def decode_list(data: bytes) -> Any:
    """A list answer: decoded whole when orjson can; else item by item, an item that
    cannot be decoded alone given as an :class:`Undecodable` in ``items``. Raises
    ValueError (orjson's error) when the answer is not a JSON object at all."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as err:
        whole = err
    try:
        return _decode_list_by_item(data.decode())
    except ValueError:
        raise whole from None


def _decode_list_by_item(text: str) -> dict[str, Any]:
    """The page's members, ``items`` decoded element by element, the others at once
    (walked here rather than by :func:`object_members`, which would scan ``items``)."""
    page: dict[str, Any] = {}
    pos = _skip_space(text, 0)
    if _char_at(text, pos) != "{":
        raise MalformedJSON("a list answer is an object")
    pos = _skip_space(text, pos + 1)
    more = _char_at(text, pos) != "}"
    end = pos + 1
    while more:
        match = _STRING.match(text, pos)
        if match is None:
            raise MalformedJSON(f"expected a key at {pos}")
        key = orjson.loads(match.group())
        pos = _skip_space(text, match.end())
        if _char_at(text, pos) != ":":
            raise MalformedJSON(f"expected ':' at {pos}")
        start = _skip_space(text, pos + 1)
        if key == "items" and _char_at(text, start) == "[":
            page[key], end = _items(text, start)
        else:
            end = value_end(text, start)
            page[key] = orjson.loads(text[start:end])
        pos, more = _separator(text, end, "}")
    return page


def _items(text: str, pos: int) -> tuple[list[Any], int]:
    """The elements of the array at ``pos``, decoded (see the module docstring), and
    where the array ends."""
    items: list[Any] = []
    pos = _skip_space(text, pos + 1)
    if _char_at(text, pos) == "]":
        return items, pos + 1
    more = True
    while more:
        try:
            item, end = _STDLIB.raw_decode(text, pos)
        except RecursionError:
            end = value_end(text, pos)
            item = _decode_alone(text, pos, end)
        items.append(item)
        pos, more = _separator(text, end, "]")
    return items, pos


def _decode_alone(text: str, start: int, end: int, event_type: str | None = None) -> Any:
    """orjson's reading of the value at ``start:end``, else what identifies it."""
    try:
        return orjson.loads(text[start:end])
    except orjson.JSONDecodeError as err:
        return identify(text, start, str(err), event_type)


def decode_watch_line(line: bytes) -> dict[str, Any] | Undecodable:
    """One watch event: decoded whole when orjson can; else its ``object`` alone (the
    event's two levels may be what passed the limit); else an :class:`Undecodable`."""
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError as err:
        try:
            text = line.decode()
        except ValueError:
            return Undecodable(reason=str(err))
        return _decode_event_by_part(text, str(err))
    if isinstance(event, dict):
        return event
    return Undecodable(reason="the watch event is not a JSON object")


def _decode_event_by_part(line: str, reason: str) -> dict[str, Any] | Undecodable:
    event_type: str | None = None
    found: tuple[int, int] | None = None
    try:
        for key, start, end in object_members(line, 0):
            if key == "type" and line[start] == '"':
                value = orjson.loads(line[start:end])
                event_type = value if isinstance(value, str) else None
            elif key == "object":
                found = (start, end)
    except ValueError:
        return Undecodable(reason=reason, event_type=event_type)
    if found is None:
        return Undecodable(reason=reason, event_type=event_type)
    obj = _decode_alone(line, *found, event_type=event_type)
    if isinstance(obj, Undecodable):
        return obj
    return {"type": event_type, "object": obj}
