"""Kubernetes ``resource.Quantity`` in pure Python.

Behaves like apimachinery's implementation where it matters to us:

* parsing accepts the same grammar, rounds magnitudes below one nano up to
  the next nano, caps binary-suffixed values at the int64 maximum and turns a
  binary quantity with a magnitude in (0, 1) into a decimal one;
* the string form is the one Go serializes: the input text when Go's parser
  keeps it (it does so for inputs that are already canonical, plus a few
  oddities such as ``+1`` or ``1E3``), otherwise the canonical form derived
  from the value and the format (``BinarySI``, ``DecimalSI``,
  ``DecimalExponent``);
* ``add`` keeps the format of the left operand unless it is zero, ``mul``
  keeps the format, and both drop any remembered input text.

Values are stored exactly as ``unscaled * 10**exponent`` with Python ints, so
there is no int64/inf.Dec split; results are the same because the Go code
only falls back to big decimals when int64 arithmetic would overflow.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from enum import StrEnum
from fractions import Fraction
from typing import Any

__all__ = [
    "Format",
    "Quantity",
    "QuantityError",
    "canonical_quantity",
    "parse_quantity",
    "parses_to_big_decimal",
    "quantities_equal",
]

_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
_NANO_EXP = -9
# Go computes this with len(num)+len(denom) against an int64 digit budget.
_MAX_INT64_FACTORS = 18

_DECIMAL_SUFFIX_EXP = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIX_EXP = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_EXP_SUFFIX = {v: k for k, v in _DECIMAL_SUFFIX_EXP.items()}
_BINARY_EXP_SUFFIX = {v: k for k, v in _BINARY_SUFFIX_EXP.items()}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")


class QuantityError(ValueError):
    """The text is not a valid Kubernetes quantity."""


class Format(StrEnum):
    DECIMAL_EXPONENT = "DecimalExponent"
    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"


def _wrap_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _normalize(unscaled: int, exponent: int) -> tuple[int, int]:
    if unscaled == 0:
        return 0, 0
    while unscaled % 10 == 0:
        unscaled //= 10
        exponent += 1
    return unscaled, exponent


class Quantity:
    """An immutable quantity: an exact decimal value, a format and maybe text."""

    __slots__ = ("_exp", "_format", "_text", "_unscaled")

    _unscaled: int
    _exp: int
    _format: Format
    _text: str | None

    def __init__(
        self,
        unscaled: int,
        exponent: int = 0,
        fmt: Format = Format.DECIMAL_SI,
        *,
        text: str | None = None,
    ) -> None:
        """Value ``unscaled * 10**exponent``; ``text`` is a remembered string form."""
        self._unscaled, self._exp = _normalize(unscaled, exponent)
        self._format = Format(fmt)
        self._text = text

    # -- construction -----------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> Quantity:
        return parse_quantity(text)

    @classmethod
    def from_json(cls, value: Any) -> Quantity:
        """Accepts what a ResourceList value may be in JSON: a string, a number or null."""
        if isinstance(value, Quantity):
            return value
        if value is None:
            # Go decodes a JSON null quantity as zero.
            return Quantity(0)
        if isinstance(value, bool):
            raise QuantityError(f"quantity must be a string or a number, not {value!r}")
        if isinstance(value, int):
            return parse_quantity(str(value))
        if isinstance(value, float):
            return parse_quantity(repr(value))
        if isinstance(value, str):
            return parse_quantity(value.strip())
        # Named by type: the repr of an object nested ~1,000 deep raises RecursionError.
        raise QuantityError(f"quantity must be a string or a number, not {type(value).__name__}")

    # -- accessors --------------------------------------------------------

    @property
    def format(self) -> Format:
        return self._format

    def as_fraction(self) -> Fraction:
        if self._exp >= 0:
            return Fraction(self._unscaled * 10**self._exp)
        return Fraction(self._unscaled, 10**-self._exp)

    def is_zero(self) -> bool:
        return self._unscaled == 0

    def sign(self) -> int:
        return (self._unscaled > 0) - (self._unscaled < 0)

    def cmp(self, other: Quantity) -> int:
        a, b = self.as_fraction(), other.as_fraction()
        return (a > b) - (a < b)

    # -- arithmetic (returns new quantities; never remembers text) ---------

    def add(self, other: Quantity) -> Quantity:
        fmt = other._format if self.is_zero() else self._format
        exp = min(self._exp, other._exp)
        total = self._unscaled * 10 ** (self._exp - exp) + other._unscaled * 10 ** (
            other._exp - exp
        )
        return Quantity(total, exp, fmt)

    def sub(self, other: Quantity) -> Quantity:
        return self.add(other.neg())

    def mul(self, factor: int) -> Quantity:
        return Quantity(self._unscaled * factor, self._exp, self._format)

    def neg(self) -> Quantity:
        return Quantity(-self._unscaled, self._exp, self._format)

    # -- string forms -----------------------------------------------------

    def canonical(self) -> str:
        """What Go's CanonicalizeBytes produces, ignoring any remembered text."""
        if self._unscaled == 0:
            return "0"
        fmt = self._format
        if fmt is Format.BINARY_SI:
            value = self.as_fraction()
            if -1024 < value < 1024 or value.denominator != 1:
                fmt = Format.DECIMAL_SI
            else:
                return _base1024(int(value))
        mantissa, exponent = self._unscaled, self._exp
        while exponent % 3:
            mantissa *= 10
            exponent -= 1
        if fmt is Format.DECIMAL_SI:
            suffix = _DECIMAL_EXP_SUFFIX.get(exponent, "")
        else:
            suffix = "" if exponent == 0 else f"e{exponent}"
        return f"{mantissa}{suffix}"

    def __str__(self) -> str:
        return self._text if self._text else self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r}, {self._format.value})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._unscaled == other._unscaled and self._exp == other._exp

    def __hash__(self) -> int:
        return hash((self._unscaled, self._exp))


def _base1024(value: int) -> str:
    times = 0
    magnitude = abs(value)
    while magnitude >= 1024 and magnitude % 1024 == 0:
        magnitude //= 1024
        times += 1
    amount = -magnitude if value < 0 else magnitude
    return f"{amount}{_BINARY_EXP_SUFFIX.get(times * 10, '')}"


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """Go's parseQuantityString: (positive, value, num, denom, suffix)."""
    positive = True
    pos = 0
    end = len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos]
    if pos >= end:
        return positive, text, num, "", ""
    if not num:
        num = "0"
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos >= end:
        return positive, value, num, denom, text[suffix_start:]
    if text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos >= end:
        return positive, value, num, denom, text[suffix_start:]
    raise QuantityError(f"quantity {text!r} does not match the expected format")


def _interpret(suffix: str) -> tuple[int, int, Format]:
    """(base, exponent, format) of a suffix, as Go's suffixer interprets it."""
    if suffix in _DECIMAL_SUFFIX_EXP:
        return 10, _DECIMAL_SUFFIX_EXP[suffix], Format.DECIMAL_SI
    if suffix in _BINARY_SUFFIX_EXP:
        return 2, _BINARY_SUFFIX_EXP[suffix], Format.BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[:1] in ("+", "-") else digits
        if body and all(c in _DIGITS for c in body):
            parsed = int(digits)
            if _INT64_MIN <= parsed <= _INT64_MAX:
                return 10, _wrap_int32(parsed), Format.DECIMAL_EXPONENT
    raise QuantityError(f"unable to parse quantity suffix {suffix!r}")


def parse_quantity(text: str) -> Quantity:
    """Parses like Go's ``resource.ParseQuantity`` (no whitespace trimming)."""
    return _parse(text)[0]


def parses_to_big_decimal(text: str) -> bool:
    """Whether Go's parser stores this quantity as an ``inf.Dec`` rather than an
    int64 amount: fractional binary values such as ``1.5Gi``, more than 18
    digits, more than nine decimals, or an int64 overflow.

    Go's ``Quantity.Mul`` then scales that shared decimal in place, so upstream's
    minResources computation multiplies such requests inside the job's own pod
    templates; callers that want to mirror that can test for it here.
    """
    return _parse(text)[1]


def _parse(text: str) -> tuple[Quantity, bool]:
    if not text:
        raise QuantityError("quantity must not be empty")
    if text == "0":
        return Quantity(0, 0, Format.DECIMAL_SI, text=text), False
    positive, value, num, denom, suffix = _split(text)
    base, exponent, fmt = _interpret(suffix)

    mantissa = 1
    if fmt is Format.BINARY_SI:
        scale = 0
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - (exponent * 3 // 10) - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))

    if precision >= 0:
        scale -= len(denom)
        if scale >= _NANO_EXP:
            shifted = num + denom
            digits = int(shifted)
            result = digits * mantissa
            if _INT64_MIN <= result <= _INT64_MAX:
                if not positive:
                    result = -result
                keep = False
                if fmt is Format.BINARY_SI:
                    keep = exponent % 10 == 0 and digits & 0x07 != 0
                else:
                    keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return Quantity(result, scale, fmt, text=text if keep else None), False

    try:
        amount = Fraction(Decimal(value))
    except (InvalidOperation, ValueError) as exc:
        raise QuantityError(f"unable to parse numeric part of quantity {text!r}") from exc
    amount *= Fraction(base) ** exponent
    negative = amount < 0
    amount = abs(amount)
    nanos = -((-amount * 10**9) // 1)  # ceiling: round up to whole nanos
    if fmt is Format.BINARY_SI and nanos > _INT64_MAX * 10**9:
        nanos = _INT64_MAX * 10**9
    if fmt is Format.BINARY_SI and 0 < nanos < 10**9:
        fmt = Format.DECIMAL_SI
    if negative:
        nanos = -nanos
    return Quantity(int(nanos), _NANO_EXP, fmt), True


def canonical_quantity(value: Any) -> str:
    """The string Go writes after decoding ``value`` from JSON and encoding it again."""
    return str(Quantity.from_json(value))


def quantities_equal(a: Any, b: Any) -> bool:
    """Semantic equality (Go's ``Quantity.Cmp(...) == 0``) of two JSON values."""
    return Quantity.from_json(a).cmp(Quantity.from_json(b)) == 0
