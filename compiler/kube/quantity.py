"""Kubernetes resource quantities: parse, add, multiply, canonical format, integer ceiling.

Implements the rules of `k8s.io/apimachinery/pkg/api/resource.Quantity` on exact fractions:
the suffix decides the format (binary `Ki`..`Ei`, decimal `n`..`E`, or `e<exp>`), values finer
than `1n` round up, and `canonical` reproduces `Quantity.String()` (`1024Mi` -> `1Gi`,
`2000m` -> `2`, `0.5` -> `500m`). Pure functions; used by the typed round trip and plugins.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

from compiler.common.records import dataclass

BINARY = "BinarySI"
DECIMAL = "DecimalSI"
EXPONENT = "DecimalExponent"

_BINARY_SUFFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
                     "E": 18}
_DECIMAL_BY_EXP = {exp: suffix for suffix, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXP = {exp: suffix for suffix, exp in _BINARY_SUFFIXES.items()}
_PATTERN = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_NANO = Fraction(1, 10**9)
_MAX_INT64 = 2**63 - 1
# Bounds that keep every quantity's arithmetic and text small (Go's int64 fast path ends near
# 1e18; beyond these no resource amount is meaningful).
MAX_DIGITS = 400
MAX_EXPONENT = 400


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@dataclass(frozen=True)
class Quantity:
    """An exact quantity value with the format its suffix implied."""

    value: Fraction
    fmt: str = DECIMAL

    def __add__(self, other: Quantity) -> Quantity:
        """`Quantity.Add`: the format stays this one's, unless this one is zero."""
        return Quantity(self.value + other.value, other.fmt if self.value == 0 else self.fmt)

    def __mul__(self, factor: int) -> Quantity:
        return Quantity(self.value * factor, self.fmt)

    def ceil(self) -> int:
        """`Quantity.Value()`: the value rounded up to an integer (0.5 -> 1)."""
        return math.ceil(self.value)

    def __str__(self) -> str:
        return canonical_string(self)


@lru_cache(maxsize=4096)
def parse(text: str | int | float) -> Quantity:
    """Parse a quantity from YAML/JSON (string or number); memoised (quantities repeat)."""
    raw = _number_text(text)
    match = _PATTERN.match(raw.strip())
    if match is None:
        raise QuantityError(f"quantities must match the regular expression "
                            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {raw!r}")
    suffix = match["suffix"] or ""
    scaled = suffix in _BINARY_SUFFIXES or suffix in _DECIMAL_SUFFIXES  # Ei and E are no exponent
    exponent = "" if scaled or suffix[:1] not in ("e", "E") else suffix[1:].lstrip("+-").lstrip("0")
    if len(match["num"]) > MAX_DIGITS or len(exponent) > 4 or int(exponent or 0) > MAX_EXPONENT:
        raise QuantityError(f"quantities beyond {MAX_DIGITS} digits or an exponent of "
                            f"{MAX_EXPONENT} are not supported: {raw[:40]!r}")
    number = Fraction(match["num"])
    if suffix in _BINARY_SUFFIXES:
        value, fmt = number * 1024 ** _BINARY_SUFFIXES[suffix], BINARY
    elif suffix in _DECIMAL_SUFFIXES:
        value, fmt = number * Fraction(10) ** _DECIMAL_SUFFIXES[suffix], DECIMAL
    else:
        value, fmt = number * Fraction(10) ** int(suffix[1:]), EXPONENT
    value = _round_up_nano(value)
    if fmt == BINARY and abs(value) > _MAX_INT64:
        # ParseQuantity caps binary-SI amounts at max int64 (either sign), decimal ones not.
        value = _MAX_INT64 if value > 0 else -_MAX_INT64
    return Quantity(value, fmt)


def _number_text(text: str | int | float) -> str:
    if isinstance(text, bool):
        raise QuantityError(f"quantities must be strings or numbers: {text!r}")
    if isinstance(text, int):
        return str(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"quantities must be finite: {text!r}")
        return repr(text) if "e" not in repr(text) else _go_json_float(text)
    return text


def _go_json_float(number: float) -> str:
    """The text Go's encoding/json gives a float64 (what kubectl sends): the shortest digits,
    in exponent form below 1e-6 and from 1e21 up (`e-07` shortened to `e-7`), plain otherwise."""
    if abs(number) < 1e-6 or abs(number) >= 1e21:
        return re.sub(r"e-0(\d)$", r"e-\1", repr(number))
    return format(Decimal(repr(number)), "f")


def _round_up_nano(value: Fraction) -> Fraction:
    scaled = value / _NANO
    if scaled.denominator == 1:
        return value
    rounded = math.ceil(scaled) if value > 0 else math.floor(scaled)
    return rounded * _NANO


@lru_cache(maxsize=4096)
def canonical(text: str | int | float) -> str:
    """The string Kubernetes serialises a parsed quantity as: the input itself when
    `ParseQuantity` judges it already canonical (it keeps the string then, so `+1`, `1E3` or
    `1.500` come back as written), else the canonical form."""
    raw = _number_text(text).strip()
    return raw if _kept_as_written(raw) else canonical_string(parse(text))


_SPLIT = re.compile(r"^([+-]?)0*([0-9]*)(?:\.([0-9]*))?(.*)$")


def _kept_as_written(raw: str) -> bool:
    """`ParseQuantity`'s fast path that stores the input string (apimachinery quantity.go)."""
    if raw == "0":
        return True
    match = _SPLIT.match(raw)
    if match is None or _PATTERN.match(raw) is None:
        return False
    num, denom, suffix = match[2] or "0", match[3] or "", match[4]
    binary = suffix in _BINARY_SUFFIXES
    if binary:
        exponent = 10 * _BINARY_SUFFIXES[suffix]
        if denom:
            return False
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        mantissa, scale = 1 << exponent, 0
    else:
        exponent = _DECIMAL_SUFFIXES[suffix] if suffix in _DECIMAL_SUFFIXES else int(suffix[1:])
        precision, mantissa, scale = 18 - len(num) - len(denom), 1, exponent
    scale -= len(denom)
    if precision < 0 or scale < -9:
        return False
    shifted = num + denom
    value = int(shifted)
    if abs(value * mantissa) >= 2**63:
        return False
    if binary:
        return exponent % 10 == 0 and value & 7 != 0
    return scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"


def canonical_string(q: Quantity) -> str:
    """Format like `Quantity.String()` (CanonicalizeBytes)."""
    if q.value == 0:
        return "0"
    fmt = q.fmt
    if fmt == BINARY and (-1024 < q.value < 1024 or q.value.denominator != 1):
        fmt = DECIMAL
    if fmt == BINARY:
        return _binary(int(q.value))
    mantissa, exponent = _decimal_parts(q.value)
    if fmt == DECIMAL and exponent in _DECIMAL_BY_EXP:
        return f"{mantissa}{_DECIMAL_BY_EXP[exponent]}"
    return f"{mantissa}e{exponent}" if exponent else str(mantissa)


def _decimal_parts(value: Fraction) -> tuple[int, int]:
    """Integer mantissa and an exponent that is a multiple of 3, mantissa as small as possible."""
    exponent = 0
    while value.denominator != 1:
        value *= 10
        exponent -= 1
    mantissa = int(value)
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3
    return mantissa * 10**shift, exponent - shift


def _binary(value: int) -> str:
    power = 0
    while value % 1024 == 0 and power < 6:
        value //= 1024
        power += 1
    return f"{value}{_BINARY_BY_EXP.get(power, '')}"


def add(a: str, b: str) -> str:
    """Sum of two quantity strings, canonical; the format of `a` wins unless `a` is zero
    (as `Quantity.Add`)."""
    return canonical_string(parse(a) + parse(b))


def is_quantity(text: object) -> bool:
    """True when `text` parses as a quantity."""
    if not isinstance(text, (str, int, float)):
        return False
    try:
        parse(text)
    except QuantityError:
        return False
    return True
