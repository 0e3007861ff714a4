"""The CUE builtins a compiled plan can call, with the meaning CUE's standard library gives them.

`len` and the integer division family are predeclared; `list` and `strings` are the packages
policy packs import. A builtin outside these tables is not compiled (the rule that calls it
is evaluated by CUE). Each function takes evaluated arguments and raises `Bottom` where CUE's
builtin returns an error and `Unsure` where Go's string functions and Python's could differ
(non-ASCII case mapping and white space).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compiler.policy.compiled.values import (
    MAX_SIZE,
    Bottom,
    LazyList,
    Struct,
    Type,
    Unsure,
    equal,
    items_of,
    sized,
)

Builtin = Callable[..., Any]


def _str(value: Any) -> str:
    if value.__class__ is str:
        return value  # (the usual case first)
    if isinstance(value, Type):
        raise Unsure
    if not isinstance(value, str):
        raise Bottom
    return value


def _int(value: Any) -> int:
    if isinstance(value, Type):
        raise Unsure
    if not isinstance(value, int) or isinstance(value, bool):
        raise Bottom
    return value


def _ascii(value: Any) -> str:
    text = _str(value)
    if not text.isascii():
        raise Unsure
    return text


def length(value: Any) -> int:
    """`len`: bytes of a string, elements of a list, regular fields of a struct."""
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, (list, dict, LazyList)):
        return len(value)
    if isinstance(value, Struct):
        return len(value.labels())
    if isinstance(value, Type):
        raise Unsure
    raise Bottom


def _division(fn: Callable[[int, int], int]) -> Builtin:
    def apply(a: Any, b: Any) -> int:
        x, y = _int(a), _int(b)
        if y == 0:
            raise Bottom
        return fn(x, y)
    return apply


def _euclid_div(x: int, y: int) -> int:
    q = x // y if y > 0 else -(x // -y)
    return q if x - q * y >= 0 else q + (1 if y < 0 else -1)


def _trunc_quo(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


PREDECLARED: dict[str, Builtin] = {
    "len": length,
    "div": _division(_euclid_div),
    "mod": _division(lambda x, y: x - _euclid_div(x, y) * y),
    "quo": _division(_trunc_quo),
    "rem": _division(lambda x, y: x - _trunc_quo(x, y) * y),
}


def _concat(lists: Any) -> list[Any]:
    out: list[Any] = []
    for part in items_of(lists):
        out += items_of(part)
    return sized(out)


def _contains(values: Any, value: Any) -> bool:
    return any(equal(v, value) for v in items_of(values))


def _ints(values: Any) -> list[int]:
    return [_int(v) for v in items_of(values)]


def _sort_strings(values: Any) -> list[str]:
    return sorted((_str(v) for v in items_of(values)), key=lambda s: s.encode())


def _split(text: Any, sep: Any) -> list[str]:
    s, by = _str(text), _str(sep)
    return list(s) if by == "" else s.split(by)


def _join(values: Any, sep: Any) -> str:
    return sized(_str(sep).join(_str(v) for v in items_of(values)))


def _repeat(text: Any, n: Any) -> str:
    s, count = _str(text), _repeat_check(n)
    if len(s) * count > MAX_SIZE:
        raise Unsure  # more than the plans make (checked before it is made): CUE decides
    return s * count


def _repeat_check(n: Any) -> int:
    count = _int(n)
    if count < 0:
        raise Bottom
    return count


def _max(values: Any) -> int:
    ints = _ints(values)
    if not ints:
        raise Bottom
    return max(ints)


def _min(values: Any) -> int:
    ints = _ints(values)
    if not ints:
        raise Bottom
    return min(ints)


LIST: dict[str, Builtin] = {
    "Concat": _concat,
    "Contains": _contains,
    "SortStrings": _sort_strings,
    "Sum": lambda values: sum(_ints(values)),
    "Max": _max,
    "Min": _min,
}

STRINGS: dict[str, Builtin] = {
    "Contains": lambda s, sub: _str(sub) in _str(s),
    "HasPrefix": lambda s, p: _str(s).startswith(_str(p)),
    "HasSuffix": lambda s, p: _str(s).endswith(_str(p)),
    "Split": _split,
    "Join": _join,
    "TrimPrefix": lambda s, p: _str(s).removeprefix(_str(p)),
    "TrimSuffix": lambda s, p: _str(s).removesuffix(_str(p)),
    "ToLower": lambda s: _ascii(s).lower(),
    "ToUpper": lambda s: _ascii(s).upper(),
    "TrimSpace": lambda s: _ascii(s).strip(" \t\n\r\v\f"),
    "Count": lambda s, sub: len(_str(s)) + 1 if _str(sub) == "" else _str(s).count(_str(sub)),
    "Repeat": _repeat,
    "Index": lambda s, sub: _ascii(s).find(_ascii(sub)),
}

PACKAGES: dict[str, dict[str, Builtin]] = {"list": LIST, "strings": STRINGS}

