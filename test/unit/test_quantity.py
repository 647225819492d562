"""resource.Quantity behaviour, with expectations taken from apimachinery's own tests
and from running apimachinery v0.35.6 on the same inputs."""

from __future__ import annotations

from fractions import Fraction

import pytest

from mpi_operator.api.quantity import (
    Format,
    Quantity,
    QuantityError,
    canonical_quantity,
    parse_quantity,
    parses_to_big_decimal,
    quantities_equal,
)

DSI = Format.DECIMAL_SI
BSI = Format.BINARY_SI
DEX = Format.DECIMAL_EXPONENT


def _value(unscaled: int, exponent: int) -> Fraction:
    return Fraction(unscaled) * Fraction(10) ** exponent


# input, value as (unscaled, base-10 exponent), format
PARSE_CASES: list[tuple[str, tuple[int, int], Format]] = [
    ("0", (0, 0), DSI),
    ("0n", (0, 0), DSI),
    ("0u", (0, 0), DSI),
    ("0m", (0, 0), DSI),
    ("0Ki", (0, 0), BSI),
    ("0k", (0, 0), DSI),
    ("0Mi", (0, 0), BSI),
    ("0M", (0, 0), DSI),
    ("0Gi", (0, 0), BSI),
    ("0G", (0, 0), DSI),
    ("0Ti", (0, 0), BSI),
    ("0T", (0, 0), DSI),
    ("1", (1, 0), DSI),
    ("1Ki", (1024, 0), BSI),
    ("8Ki", (8 * 1024, 0), BSI),
    ("7Mi", (7 * 1024**2, 0), BSI),
    ("6Gi", (6 * 1024**3, 0), BSI),
    ("5Ti", (5 * 1024**4, 0), BSI),
    ("4Pi", (4 * 1024**5, 0), BSI),
    ("3Ei", (3 * 1024**6, 0), BSI),
    ("10Ti", (10 * 1024**4, 0), BSI),
    ("100Ti", (100 * 1024**4, 0), BSI),
    ("5n", (5, -9), DSI),
    ("4u", (4, -6), DSI),
    ("3m", (3, -3), DSI),
    ("9", (9, 0), DSI),
    ("8k", (8, 3), DSI),
    ("50k", (5, 4), DSI),
    ("7M", (7, 6), DSI),
    ("6G", (6, 9), DSI),
    ("5T", (5, 12), DSI),
    ("40T", (4, 13), DSI),
    ("300T", (3, 14), DSI),
    ("2P", (2, 15), DSI),
    ("1E", (1, 18), DSI),
    ("1E-3", (1, -3), DEX),
    ("1e3", (1, 3), DEX),
    ("1E6", (1, 6), DEX),
    ("1e9", (1, 9), DEX),
    ("1E12", (1, 12), DEX),
    ("1e15", (1, 15), DEX),
    ("1E18", (1, 18), DEX),
    ("1e14", (1, 14), DEX),
    ("1e13", (1, 13), DEX),
    ("100.035k", (100035, 0), DSI),
    ("0.001", (1, -3), DSI),
    ("0.0005k", (5, -1), DSI),
    ("0.005", (5, -3), DSI),
    ("0.05", (5, -2), DSI),
    ("0.5", (5, -1), DSI),
    ("0.00050k", (5, -1), DSI),
    ("0.00500", (5, -3), DSI),
    ("0.05000", (5, -2), DSI),
    ("0.50000", (5, -1), DSI),
    ("0.5e0", (5, -1), DEX),
    ("0.5e-1", (5, -2), DEX),
    ("0.5e-2", (5, -3), DEX),
    ("10.035M", (10035, 3), DSI),
    ("1.2e3", (12, 2), DEX),
    ("1.3E+6", (13, 5), DEX),
    ("1.40e9", (14, 8), DEX),
    ("1.53E12", (153, 10), DEX),
    ("1.6e15", (16, 14), DEX),
    ("1.7E18", (17, 17), DEX),
    ("9.01", (901, -2), DSI),
    ("8.1k", (81, 2), DSI),
    ("7.123456M", (7123456, 0), DSI),
    ("6.987654321G", (6987654321, 0), DSI),
    ("5.444T", (5444, 9), DSI),
    ("40.1T", (401, 11), DSI),
    ("300.2T", (3002, 11), DSI),
    ("2.5P", (25, 14), DSI),
    ("1.01E", (101, 16), DSI),
    # rounded up to whole nanos
    ("3.001n", (4, -9), DSI),
    ("1.1E-9", (2, -9), DEX),
    ("0.0000000001", (1, -9), DSI),
    ("0.0000000005", (1, -9), DSI),
    ("0.00000000050", (1, -9), DSI),
    ("0.5e-9", (1, -9), DEX),
    ("0.9n", (1, -9), DSI),
    ("0.00000012345", (124, -9), DSI),
    ("0.00000012354", (124, -9), DSI),
    # binary values are capped at the int64 maximum
    ("9Ei", ((1 << 63) - 1, 0), BSI),
    ("9223372036854775807Ki", ((1 << 63) - 1, 0), BSI),
    ("12E", (12, 18), DSI),
    ("100.035Ki", (10243584, -2), BSI),
    ("0.5Mi", (512 * 1024, 0), BSI),
    ("0.05Gi", (536870912, -1), BSI),
    ("0.025Ti", (274877906944, -1), BSI),
    # below one, a binary quantity becomes decimal
    ("0.000000000001Ki", (2, -9), DSI),
    (".001", (1, -3), DSI),
    (".0001k", (100, -3), DSI),
    ("1.", (1, 0), DSI),
    ("1.G", (1, 9), DSI),
]


@pytest.mark.parametrize(("text", "value", "fmt"), PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_parse(text: str, value: tuple[int, int], fmt: Format) -> None:
    expected = _value(*value)
    for sign, factor in (("", 1), ("+", 1), ("-", -1)):
        q = parse_quantity(sign + text)
        assert q.as_fraction() == factor * expected
        assert q.format is fmt


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1.1.M",
        "1+1.0M",
        "0.1mi",
        "0.1am",
        "aoeu",
        ".5i",
        "1i",
        "-3.01i",
        "-3.01e-",
        " 1",
        "1 ",
        "Non-Numeric",
        "1e",
        "1ee3",
        "1Kii",
    ],
)
def test_parse_invalid(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


# value, format, canonical string, an alternate spelling of the same value
STRING_CASES: list[tuple[tuple[int, int], Format, str, str]] = [
    ((1024**3, 0), BSI, "1Gi", "1024Mi"),
    ((300 * 1024**2, 0), BSI, "300Mi", "307200Ki"),
    ((6 * 1024, 0), BSI, "6Ki", ""),
    ((1001 * 1024**3, 0), BSI, "1001Gi", "1025024Mi"),
    ((1024**4, 0), BSI, "1Ti", "1024Gi"),
    ((5, 0), BSI, "5", "5000m"),
    ((500, -3), BSI, "500m", "0.5"),
    ((1, 9), DSI, "1G", "1000M"),
    ((1000, 6), DSI, "1G", "0.001T"),
    ((1000000, 3), DSI, "1G", ""),
    ((1000000000, 0), DSI, "1G", ""),
    ((1, -3), DSI, "1m", "1000u"),
    ((80, -3), DSI, "80m", ""),
    ((1080, -3), DSI, "1080m", "1.08"),
    ((108, -2), DSI, "1080m", "1080000000n"),
    ((10800, -4), DSI, "1080m", ""),
    ((300, 6), DSI, "300M", ""),
    ((1, 12), DSI, "1T", ""),
    ((1234567, 6), DSI, "1234567M", ""),
    ((1234567, -3), BSI, "1234567m", ""),
    ((3, 3), DSI, "3k", ""),
    ((1025, 0), BSI, "1025", ""),
    ((0, 0), DSI, "0", ""),
    ((0, 0), BSI, "0", ""),
    ((1, 9), DEX, "1e9", ".001e12"),
    ((1, -3), DEX, "1e-3", "0.001e0"),
    ((1, -9), DEX, "1e-9", "1000e-12"),
    ((80, -3), DEX, "80e-3", ""),
    ((300, 6), DEX, "300e6", ""),
    ((1, 12), DEX, "1e12", ""),
    ((1, 3), DEX, "1e3", ""),
    ((3, 3), DEX, "3e3", ""),
    ((3, 3), DSI, "3k", ""),
    ((0, 0), DEX, "0", "00"),
    ((1, -9), DSI, "1n", ""),
    ((80, -9), DSI, "80n", ""),
    ((1080, -9), DSI, "1080n", ""),
    ((108, -8), DSI, "1080n", ""),
    ((10800, -10), DSI, "1080n", ""),
    ((1, -6), DSI, "1u", ""),
    ((80, -6), DSI, "80u", ""),
    ((1080, -6), DSI, "1080u", ""),
]


@pytest.mark.parametrize(
    ("value", "fmt", "expected", "alternate"),
    STRING_CASES,
    ids=[f"{c[2]}-{c[1].value}" for c in STRING_CASES],
)
def test_string(value: tuple[int, int], fmt: Format, expected: str, alternate: str) -> None:
    q = Quantity(*value, fmt)
    assert str(q) == expected
    assert str(parse_quantity(expected)) == expected
    if alternate:
        assert str(parse_quantity(alternate)) == expected
    if not q.is_zero():
        assert str(q.neg()) == "-" + expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # canonical forms
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
        ("1500m", "1500m"),
        ("1.5", "1500m"),
        ("1.5Gi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("3072Ki", "3Mi"),
        ("1000m", "1"),
        ("1000Ki", "1000Ki"),
        ("100.035Ki", "102435840m"),
        ("1023Ki", "1023Ki"),
        ("1000k", "1M"),
        ("10e2", "1e3"),
        ("1.5e3", "1500"),
        ("0.5e-1", "50e-3"),
        ("1.1E-9", "2e-9"),
        ("0.00000012345", "124n"),
        ("9Ei", "9223372036854775807"),
        ("1000E", "1"),
        # texts Go keeps as given when re-serializing
        ("+1", "+1"),
        ("-1", "-1"),
        ("1E3", "1E3"),
        ("1e+3", "1e+3"),
        ("1e0", "1e0"),
        ("+1Ki", "+1Ki"),
        ("12E", "12E"),
        ("007", "007"),
    ],
)
def test_parse_emit(text: str, expected: str) -> None:
    assert str(parse_quantity(text)) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2", "2"),
        (" 2Gi ", "2Gi"),
        (2, "2"),
        (1.5, "1500m"),
        (None, "0"),
        ("2048Mi", "2Gi"),
    ],
)
def test_canonical_quantity_from_json(value: object, expected: str) -> None:
    assert canonical_quantity(value) == expected


@pytest.mark.parametrize("value", [True, [], {}, "abc"])
def test_from_json_rejects(value: object) -> None:
    with pytest.raises(QuantityError):
        Quantity.from_json(value)


@pytest.mark.parametrize(
    ("a", "b", "expected", "fmt"),
    [
        ("10", "10", "20", DSI),
        ("10", "1", "11", DSI),
        ("10Ki", "1", "10241", BSI),
        ("1", "1Ki", "1025", DSI),
        ("0", "50", "50", DSI),
        ("0", "1Gi", "1Gi", BSI),
        ("1Gi", "0", "1Gi", BSI),
        ("100m", "0", "100m", DSI),
        ("0", "0", "0", DSI),
        ("1Gi", "512Mi", "1536Mi", BSI),
        ("1G", "1Gi", "2073741824", DSI),
        ("1Gi", "1G", "2073741824", BSI),
        ("2Gi", "2Gi", "4Gi", BSI),
        ("1", "500m", "1500m", DSI),
        ("1e3", "1e3", "2e3", DEX),
        ("1e3", "1", "1001", DEX),
        ("9223372036854775807", "1", "9223372036854775808", DSI),
    ],
)
def test_add(a: str, b: str, expected: str, fmt: Format) -> None:
    got = parse_quantity(a).add(parse_quantity(b))
    assert str(got) == expected
    assert got.format is fmt


@pytest.mark.parametrize(
    ("a", "factor", "expected"),
    [
        ("10", 10, "100"),
        ("10", 1, "10"),
        ("10Ki", 1, "10Ki"),
        ("0", 50, "0"),
        ("50", 0, "0"),
        ("10", -10, "-100"),
        ("-50", -50, "2500"),
        ("20Gi", 2, "40Gi"),
        ("10Gi", 1000, "10000Gi"),
        ("1.5Gi", 3, "4608Mi"),
        ("1.5", 2, "3"),
        ("1e3", 3, "3e3"),
        ("100m", 30, "3"),
        ("512Mi", 2, "1Gi"),
        ("9223372036854775807", 10, "92233720368547758070"),
    ],
)
def test_mul(a: str, factor: int, expected: str) -> None:
    q = parse_quantity(a)
    got = q.mul(factor)
    assert str(got) == expected
    assert got.format is q.format


def test_add_and_mul_forget_the_given_text() -> None:
    q = parse_quantity("+1")
    assert str(q) == "+1"
    assert str(q.mul(1)) == "1"
    assert str(q.add(parse_quantity("0"))) == "1"


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("0", "0", 0),
        ("100m", "50m", 1),
        ("50m", "100m", -1),
        ("10000T", "100Gi", 1),
        ("1", "1000m", 0),
        ("1Gi", "1024Mi", 0),
        ("-1", "1n", -1),
    ],
)
def test_cmp(a: str, b: str, expected: int) -> None:
    assert parse_quantity(a).cmp(parse_quantity(b)) == expected
    assert quantities_equal(a, b) is (expected == 0)
    assert (parse_quantity(a) == parse_quantity(b)) is (expected == 0)


@pytest.mark.parametrize(
    ("text", "big"),
    [
        ("1", False),
        ("1.5", False),
        ("1Gi", False),
        ("1.5Gi", True),
        ("0.5Mi", True),
        ("100m", False),
        ("1n", False),
        ("0.0000000001", True),
        ("1234567890123456789", True),
        ("123456789012345678", False),
        ("9Ei", True),
        ("8Ei", True),
        ("7Ei", True),
        ("1Pi", True),
        ("1Ti", False),
        ("99Ti", False),
        ("1e3", False),
        ("1.1E-9", True),
        ("0", False),
    ],
)
def test_parses_to_big_decimal(text: str, big: bool) -> None:
    assert parses_to_big_decimal(text) is big
