"""Label selectors with apimachinery's semantics.

Two entry points build the same :class:`Selector`:

* :func:`parse_selector` - the string form (``a=b,c!=d,e in (f,g),h notin (i),j,!k``)
  as accepted by ``labels.Parse``; equality-based (``=``, ``==``, ``!=``) and
  set-based (``in``, ``notin``, exists, ``!`` does-not-exist) requirements.
* :func:`selector_from_label_selector` - a metav1.LabelSelector dict
  (``matchLabels`` / ``matchExpressions``) as ``LabelSelectorAsSelector``:
  ``None`` selects nothing, ``{}`` selects everything.

Semantics worth remembering: ``!=`` and ``notin`` also match objects that do
not have the key at all, and a selector is the AND of its requirements.
``str(selector)`` renders the canonical string, usable as ``labelSelector=``.
Numeric operators (``gt``/``lt``) are not supported by the server for label
selectors in list calls and are omitted here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from mpi_operator.api.object_model import metadata_of


class Op(Enum):
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"


class SelectorError(ValueError):
    pass


_KEY_RE = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")


def _check_key(key: str) -> None:
    if not _KEY_RE.match(key) or len(key.split("/")[0]) > 253:
        raise SelectorError(f"invalid label key {key!r}")


def _check_value(value: str) -> None:
    if not _VALUE_RE.match(value):
        raise SelectorError(f"invalid label value {value!r}")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: Op
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_key(self.key)
        if self.op in (Op.EQUALS, Op.DOUBLE_EQUALS, Op.NOT_EQUALS):
            if len(self.values) != 1:
                raise SelectorError(f"{self.op.value} needs exactly one value")
        elif self.op in (Op.IN, Op.NOT_IN):
            if not self.values:
                raise SelectorError(f"{self.op.value} needs at least one value")
            # Sets: order and repetition do not matter, so normalise for ==.
            object.__setattr__(self, "values", tuple(sorted(set(self.values))))
        elif self.values:
            raise SelectorError("exists / does-not-exist take no values")
        for v in self.values:
            _check_value(v)

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op in (Op.EQUALS, Op.DOUBLE_EQUALS, Op.IN):
            return self.key in labels and labels[self.key] in self.values
        if op in (Op.NOT_EQUALS, Op.NOT_IN):
            return self.key not in labels or labels[self.key] not in self.values
        if op is Op.EXISTS:
            return self.key in labels
        return self.key not in labels

    def __str__(self) -> str:
        if self.op is Op.EXISTS:
            return self.key
        if self.op is Op.DOES_NOT_EXIST:
            return "!" + self.key
        if self.op in (Op.IN, Op.NOT_IN):
            return f"{self.key} {self.op.value} ({','.join(self.values)})"
        return f"{self.key}{self.op.value}{self.values[0]}"


class Selector:
    """The conjunction of requirements; :data:`EVERYTHING` has none."""

    def __init__(self, requirements: Iterable[Requirement] = (), *, nothing: bool = False):
        self.requirements = tuple(sorted(requirements, key=lambda r: r.key))
        self._nothing = nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self._nothing:
            return False
        lbls = labels or {}
        return all(r.matches(lbls) for r in self.requirements)

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        meta = metadata_of(obj)
        return self.matches(meta.get("labels") or {})

    def empty(self) -> bool:
        return not self._nothing and not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return "Selector(NOTHING)" if self._nothing else f"Selector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Selector)
            and self.requirements == other.requirements
            and self._nothing == other._nothing
        )

    def __hash__(self) -> int:
        return hash((self.requirements, self._nothing))


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """``labels.SelectorFromSet``: every key must equal its value."""
    return Selector(Requirement(k, Op.EQUALS, (v,)) for k, v in labels.items())


_TOKEN_RE = re.compile(r"\s*(==|!=|=|\(|\)|,|!|[^\s=!(),]+)")


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN_RE.match(text, pos)
        if not m:
            raise SelectorError(f"cannot parse selector at {text[pos:]!r}")
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


_PUNCTUATION = ("(", ")", ",", "=", "==", "!=")


def _at(tokens: list[str], i: int) -> str | None:
    return tokens[i] if i < len(tokens) else None


def _parse_value_set(tokens: list[str], i: int) -> tuple[tuple[str, ...], int]:
    """The values of ``in (...)``/``notin (...)`` from just after the '('; returns
    them and the index after the ')'. Empty places between commas are empty values."""
    values: list[str] = []
    expect_value = True
    while True:
        t = _at(tokens, i)
        if t is None:
            raise SelectorError("unterminated value set")
        i += 1
        if t == ")":
            if expect_value and values:
                values.append("")
            break
        if t == ",":
            if expect_value:
                values.append("")
            expect_value = True
            continue
        if not expect_value:
            raise SelectorError("expected ',' between values")
        values.append(t)
        expect_value = False
    return tuple(values or [""]), i


def _parse_requirement(tokens: list[str], i: int) -> tuple[Requirement, int]:
    """One requirement from ``tokens[i]``; returns it and the index after it."""
    key = tokens[i]
    if key == "!":
        key_after = _at(tokens, i + 1)
        if key_after is None or key_after in (*_PUNCTUATION, "!"):
            raise SelectorError("expected a key after '!'")
        return Requirement(key_after, Op.DOES_NOT_EXIST), i + 2
    if key in _PUNCTUATION:
        raise SelectorError(f"unexpected {key!r}")
    nxt = _at(tokens, i + 1)
    if nxt is None or nxt == ",":
        return Requirement(key, Op.EXISTS), i + 1
    if nxt in ("=", "==", "!="):
        value = _at(tokens, i + 2)
        if value is None or value == ",":
            # An empty value is legal: ``a=`` matches a="".
            return Requirement(key, Op(nxt), ("",)), i + 2
        if value in ("(", ")", "!", "=", "==", "!="):
            raise SelectorError(f"unexpected {value!r} after {key}{nxt}")
        return Requirement(key, Op(nxt), (value,)), i + 3
    if nxt in ("in", "notin"):
        if _at(tokens, i + 2) != "(":
            raise SelectorError(f"expected '(' after {nxt}")
        values, i = _parse_value_set(tokens, i + 3)
        return Requirement(key, Op.IN if nxt == "in" else Op.NOT_IN, values), i
    raise SelectorError(f"unexpected {nxt!r} after key {key!r}")


def parse_selector(text: str) -> Selector:
    """Parse a label selector string (``labels.Parse``)."""
    tokens = _tokenize(text)
    reqs: list[Requirement] = []
    i = 0
    n = len(tokens)
    while i < n:
        requirement, i = _parse_requirement(tokens, i)
        reqs.append(requirement)
        if i < n:
            if tokens[i] != ",":
                raise SelectorError(f"expected ',' but found {tokens[i]!r}")
            i += 1
            if i == n:
                raise SelectorError("trailing ','")
    return Selector(reqs)


_EXPR_OPS = {
    "In": Op.IN,
    "NotIn": Op.NOT_IN,
    "Exists": Op.EXISTS,
    "DoesNotExist": Op.DOES_NOT_EXIST,
}


def selector_from_label_selector(ls: Mapping[str, Any] | None) -> Selector:
    """metav1.LabelSelectorAsSelector: None selects nothing, empty selects all."""
    if ls is None:
        return NOTHING
    match_labels: Mapping[str, str] = ls.get("matchLabels") or {}
    exprs: list[Mapping[str, Any]] = ls.get("matchExpressions") or []
    if not match_labels and not exprs:
        return EVERYTHING
    reqs = [Requirement(k, Op.EQUALS, (v,)) for k, v in match_labels.items()]
    for expr in exprs:
        op = _EXPR_OPS.get(expr.get("operator", ""))
        if op is None:
            raise SelectorError(f"{expr.get('operator')!r} is not a valid selector operator")
        values = tuple(expr.get("values") or ())
        if op in (Op.EXISTS, Op.DOES_NOT_EXIST) and values:
            raise SelectorError("values must be empty for Exists and DoesNotExist")
        reqs.append(Requirement(expr["key"], op, values))
    return Selector(reqs)


def as_selector(sel: Selector | str | Mapping[str, str] | None) -> Selector:
    """Accept a Selector, a selector string or a plain label set."""
    if sel is None:
        return EVERYTHING
    if isinstance(sel, Selector):
        return sel
    if isinstance(sel, str):
        return parse_selector(sel)
    return selector_from_set(sel)
