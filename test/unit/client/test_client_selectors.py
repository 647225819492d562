"""Label selector parsing and matching with apimachinery's semantics."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpi_operator.client.selectors import (
    EVERYTHING,
    NOTHING,
    SelectorError,
    parse_selector,
    selector_from_label_selector,
    selector_from_set,
)


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a=b", {}, False),
        ("a!=b", {"a": "c"}, True),
        ("a!=b", {}, True),
        ("a!=b", {"a": "b"}, False),
        ("a in (x, y)", {"a": "y"}, True),
        ("a in (x,y)", {"a": "z"}, False),
        ("a in (x)", {}, False),
        ("a notin (x,y)", {"a": "z"}, True),
        ("a notin (x,y)", {}, True),
        ("a notin (x,y)", {"a": "x"}, False),
        ("a", {"a": ""}, True),
        ("a", {"b": "c"}, False),
        ("!a", {"b": "c"}, True),
        ("!a", {"a": "c"}, False),
        ("a=b,c in (d),!e,f", {"a": "b", "c": "d", "f": "1"}, True),
        ("a=b,c in (d),!e,f", {"a": "b", "c": "d", "f": "1", "e": "x"}, False),
        ("example.com/role=worker", {"example.com/role": "worker"}, True),
        ("a=", {"a": ""}, True),
        ("", {"anything": "x"}, True),
    ],
)
def test_string_selectors_match_like_labels_parse(
    selector: str, labels: dict[str, str], expected: bool
) -> None:
    assert parse_selector(selector).matches(labels) is expected


@pytest.mark.parametrize(
    "bad", ["a=b,", "=b", "a in x", "a in (x", "a b", "a=(b)", "!", "a=b c", "-a=b", "a=b!"]
)
def test_malformed_selectors_are_rejected(bad: str) -> None:
    with pytest.raises(SelectorError):
        parse_selector(bad)


def test_selector_renders_canonical_string_that_parses_back() -> None:
    sel = parse_selector("z=1, a notin (y,x), !m, k")
    assert str(sel) == "a notin (x,y),k,!m,z=1"
    assert parse_selector(str(sel)) == sel


def test_label_selector_nil_selects_nothing_and_empty_selects_everything() -> None:
    assert selector_from_label_selector(None) is NOTHING
    assert not NOTHING.matches({})
    assert selector_from_label_selector({}) is EVERYTHING
    assert EVERYTHING.matches({"x": "y"})


def test_label_selector_match_labels_and_expressions_are_anded() -> None:
    sel = selector_from_label_selector(
        {
            "matchLabels": {"app": "mpi"},
            "matchExpressions": [
                {"key": "role", "operator": "In", "values": ["launcher", "worker"]},
                {"key": "tier", "operator": "NotIn", "values": ["cache"]},
                {"key": "job", "operator": "Exists"},
                {"key": "skip", "operator": "DoesNotExist"},
            ],
        }
    )
    assert sel.matches({"app": "mpi", "role": "worker", "job": "pi"})
    assert not sel.matches({"app": "mpi", "role": "worker", "job": "pi", "skip": "1"})
    assert not sel.matches({"app": "mpi", "role": "ps", "job": "pi"})
    assert not sel.matches({"app": "mpi", "role": "worker", "job": "pi", "tier": "cache"})
    assert not sel.matches({"app": "other", "role": "worker", "job": "pi"})


def test_label_selector_rejects_unknown_operators_and_values_on_exists() -> None:
    with pytest.raises(SelectorError):
        selector_from_label_selector({"matchExpressions": [{"key": "a", "operator": "Gt"}]})
    with pytest.raises(SelectorError):
        selector_from_label_selector(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}
        )


def test_selector_from_set_requires_every_pair() -> None:
    sel = selector_from_set({"a": "1", "b": "2"})
    assert sel.matches({"a": "1", "b": "2", "c": "3"})
    assert not sel.matches({"a": "1"})


_names = st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True)


@given(st.dictionaries(_names, _names, max_size=5), st.dictionaries(_names, _names, max_size=5))
def test_set_selector_agrees_with_its_string_form(
    want: dict[str, str], labels: dict[str, str]
) -> None:
    sel = selector_from_set(want)
    assert parse_selector(str(sel)).matches(labels) == sel.matches(labels)
    assert sel.matches(labels) == all(labels.get(k) == v for k, v in want.items())
