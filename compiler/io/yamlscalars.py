"""Plain YAML scalars resolved as kubectl resolves them, so tjc sees what the API server sees.

kubectl reads manifests with sigs.k8s.io/yaml: go-yaml v2 resolves each plain (unquoted)
scalar (YAML 1.1 booleans y/yes/on/..., nulls, `.inf`/`.nan`, ints with `0x`/`0o`/`0b`/octal
`0` prefixes and `_` separators, int64 then uint64, then floats without a dot such as `1e9`),
the result is encoded as JSON and the API server decodes that JSON (integral numbers become
int64). So `memory: 1e9` reaches the cluster as the number 1000000000 (the quantity `1G`),
`08` as 8, `2001-12-14` stays a string, and `.inf` fails in kubectl. PyYAML's own resolver
(sexagesimal ints, floats need a dot, timestamps) differs on all of these.

`go_value` is what go-yaml makes of a plain scalar, `resolve_plain` the JSON value the API
server receives for it (`api_value` for any Go value); `float32_key` names a float mapping key
as sigs.k8s.io/yaml does. Explicitly tagged scalars are `yamltags`'. Pure; called by the
loader's modules (`yamlread`, `yamltags`) and by `emit` (a string it prints plain must read
back as a string).
"""

from __future__ import annotations

import math
import re
import struct
from decimal import Decimal
from typing import Any

PLAIN_TAG = "tag:tjc,2024:kubectl-plain"
INT64 = 2**63
BOOLS = {**dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On",
                          "ON"), True),
         **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off",
                          "OFF"), False)}
NULLS = frozenset(("", "~", "null", "Null", "NULL"))
SPECIAL_FLOATS = {**dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
                  **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
                  **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf)}
# (Go's `$` is the end of the text; Python's also matches before a final line break: `\Z`.)
YAML_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
GO_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+\.?[0-9]*)([eE][-+]?[0-9]+)?\Z"
                      r"|^[-+]?(inf|infinity|nan)\Z", re.IGNORECASE)
_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}
# A plain scalar is a string unless it is one of these words or starts with one of these
# characters (go_value's branches; the loader's fast path asks the same two questions).
WORDS = frozenset(NULLS | BOOLS.keys() | SPECIAL_FLOATS.keys())
NUMBER_STARTS = ".+-0123456789"


class Unrepresentable(ValueError):
    """A value kubectl cannot send as JSON (`.inf`, `.nan`), or a key it cannot convert."""


def _go_int(text: str, bits_unsigned: bool = False) -> int | None:
    """strconv.ParseInt(text, 0, 64) (or ParseUint); None when Go fails."""
    sign, body = "", text
    if body[:1] in "+-" and body:
        if bits_unsigned:
            return None
        sign, body = body[0], body[1:]
    base, digits = 10, body
    lower = body[:2].lower()
    if lower in ("0x", "0o", "0b"):
        base, digits = {"0x": 16, "0o": 8, "0b": 2}[lower], body[2:]
    elif len(body) > 1 and body[0] == "0":
        base, digits = 8, body[1:]
    if not digits or any(c not in _DIGITS[base] for c in digits):
        return None
    value = int(sign + digits, base)
    if bits_unsigned:
        return value if value < 2**64 else None
    return value if -INT64 <= value < INT64 else None


def _go_float(text: str) -> float | None:
    """strconv.ParseFloat(text, 64) for decimal text; None on error (incl. out of range)."""
    if not GO_FLOAT.match(text):
        return None
    value = float(text)
    if math.isinf(value) and "inf" not in text.lower():
        return None
    return value


def _api_number(value: float) -> int | float:
    """What the API server decodes from Go's JSON encoding of a float64."""
    if math.isnan(value) or math.isinf(value):
        raise Unrepresentable(f"json: unsupported value: {_go_special(value)}")
    if value == 0:
        return 0
    if value != int(value) or abs(value) >= 1e21:
        return value
    number = int(Decimal(repr(value)))
    return number if -INT64 <= number < INT64 else value


def _go_special(value: float) -> str:
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


# What every number below is written with (ints of each base and prefix, floats, exponents),
# and a sign none of them has: after the first character but not after an exponent's e.
_NUMBER_CHARS = frozenset("0123456789abcdefABCDEFxXoO+-.")
_INNER_SIGN = re.compile(r"[^eE][-+]")


def _resolve_number(text: str) -> tuple[str, Any]:
    """The `D`/`S` (digit or sign first) branch of go-yaml v2's resolve: (Go type, value)."""
    plain = text.replace("_", "")
    if not _NUMBER_CHARS.issuperset(plain) or _INNER_SIGN.search(plain):
        return "str", text  # no branch below takes it (`--run=1`, `1234-5678`, `1.2.3-rc1`)
    signed = _go_int(plain)
    if signed is not None:
        return "int", signed
    unsigned = _go_int(plain, bits_unsigned=True)
    if unsigned is not None:
        return "uint", unsigned
    if YAML_FLOAT.match(plain):
        floated = _go_float(plain)
        if floated is not None:
            return "float", floated
    if plain.startswith(("0b", "-0b")):
        negative = plain.startswith("-")
        digits = plain[3:] if negative else plain[2:]
        if digits and all(c in "01" for c in digits):
            value = -int(digits, 2) if negative else int(digits, 2)
            if -INT64 <= value < INT64:
                return "int", value
            if not negative and value < 2**64:
                return "uint", value
    return "str", text


def go_value(text: str) -> tuple[str, Any]:
    """What go-yaml v2 makes of a plain scalar: (Go type: null, bool, int, uint, float or
    str; value)."""
    if text in WORDS:
        if text in NULLS:
            return "null", None
        return ("bool", BOOLS[text]) if text in BOOLS else ("float", SPECIAL_FLOATS[text])
    if text[0] not in NUMBER_STARTS:
        return "str", text
    if text[0] == ".":
        value = _go_float(text)
        return ("str", text) if value is None else ("float", value)
    return _resolve_number(text)


def resolve_plain(text: str) -> Any:
    """The JSON value the API server receives for a plain scalar kubectl read."""
    return api_value(*go_value(text))


def api_value(kind: str, value: Any) -> Any:
    """The JSON value the API server receives for a value of this Go type (`go_value`);
    Unrepresentable for a float JSON cannot carry."""
    if kind == "uint":
        return value if value < INT64 else float(value)
    if kind == "float":
        return _api_number(value)
    return value


def float32_key(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 32), with sigs.k8s.io/yaml's .inf/.nan names."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if math.copysign(1, single) < 0 else "0"
    for digits in range(1, 10):
        text = f"{single:.{digits - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exp_text = text.split("e")
    exp = int(exp_text)
    sign = "-" if mantissa.startswith("-") else ""
    figures = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    if exp < -4 or exp >= 6:
        body = figures[0] + ("." + figures[1:] if len(figures) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{sign}0.{'0' * (-exp - 1)}{figures}"
    whole = figures.ljust(exp + 1, "0")
    rest = figures[exp + 1:]
    return f"{sign}{whole[:exp + 1]}" + (f".{rest}" if rest else "")
