"""CUE's operators and clauses on the plans' values: selection, indexing, comparison,
arithmetic on integers, interpolation, `if` conditions and `for` sources.

Each raises `Bottom` where CUE gives an error (checked against the evaluator in the tests) and
`Unsure` where the answer depends on what the plans do not model (floats in arithmetic or text,
a non-concrete value, the field order of a struct the contract declares).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from compiler.policy.compiled.values import (
    Bottom,
    Env,
    LazyList,
    Settings,
    Struct,
    Type,
    Unsure,
    equal,
    kind_of,
    sized,
    unify,
)

_INT64 = 1 << 63


class Thunk:
    """A `let` of a comprehension: evaluated when first read."""

    __slots__ = ("done", "env", "fn", "value")

    def __init__(self, fn: Callable[[Env], Any], env: Env) -> None:
        self.fn, self.env, self.done = fn, env, False
        self.value: Any = None

    def get(self) -> Any:
        if not self.done:
            self.value, self.done = self.fn(self.env), True
        return self.value


def settled(value: Any) -> Any:
    """A value a presence test or default can judge: a type is not concrete (`Unsure`)."""
    if isinstance(value, Type):
        raise Unsure
    return value


def tentative(value: Any) -> Any:
    """A default's other branch, taken because the default is undefined: a struct or list
    written there answers a missing field or index with `Unsure` (CUE keeps such a
    disjunction open, and what is missing is incomplete rather than an error)."""
    if isinstance(value, Struct) and value.data is None:
        return Struct(value.conjuncts, None, True)
    if isinstance(value, LazyList):
        out = LazyList(value.items)
        out.tentative = True
        return out
    return value


def walk(value: Any, labels: tuple[str, ...]) -> Any:
    """`x.a.b.c` (labels in order), plain data taken directly."""
    for label in labels:
        value = value[label] if type(value) is dict and label in value else select(value, label)
    return value


MISSING = object()


def reach(value: Any, labels: tuple[str, ...]) -> Any:
    """`x.a.b.c` for the x given, or MISSING where CUE's result is an error."""
    for label in labels:
        if type(value) is dict:
            value = value.get(label, MISSING)
            if value is MISSING:
                return value
        else:
            try:
                value = select(value, label)
            except Bottom:
                return MISSING
    return settled(value)


def present(value: Any, labels: tuple[str, ...]) -> bool:
    """`x.a.b.c != _|_` for the x given: whether the chain reaches a value."""
    return reach(value, labels) is not MISSING


def select(value: Any, label: str) -> Any:
    """`x.label`."""
    if value.__class__ is dict:  # (plain data and structs first: the usual cases)
        if label in value:
            return value[label]
        raise Bottom
    if value.__class__ is Struct:
        return value.field(label)
    if isinstance(value, dict):
        if label in value:
            return value[label]
        if isinstance(value, Settings):
            raise Unsure
        raise Bottom
    if isinstance(value, Struct):
        return value.field(label)
    if isinstance(value, Type):
        raise Unsure
    raise Bottom


def index(value: Any, key: Any) -> Any:
    """`x[key]`: a struct by a string, a list by a non-negative integer."""
    if value.__class__ is list and key.__class__ is int:  # (the usual case first)
        if 0 <= key < len(value):
            return value[key]
        raise Bottom
    if isinstance(key, Type) or isinstance(value, Type):
        raise Unsure
    if isinstance(value, (dict, Struct)):
        if not isinstance(key, str):
            raise Bottom
        return select(value, key)
    if isinstance(value, (list, LazyList)):
        if not isinstance(key, int) or isinstance(key, bool):
            raise Bottom
        if not 0 <= key < len(value):
            raise Unsure if isinstance(value, LazyList) and value.tentative else Bottom
        return value[key] if isinstance(value, list) else value.get(key)
    raise Bottom


def condition(value: Any) -> bool:
    """An `if` clause's condition: a bool, else an error."""
    if value.__class__ is bool:
        return bool(value)
    if isinstance(value, Type):
        raise Unsure
    raise Bottom


def negate(value: Any) -> bool:
    return not condition(value)


def _number(value: Any) -> int | float:
    if isinstance(value, Type):
        raise Unsure
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Bottom
    return value


def _int(value: Any) -> int:
    number = _number(value)
    if isinstance(number, float) or not -_INT64 <= number < _INT64:
        raise Unsure  # CUE's decimal arithmetic, not Python's float
    return number


def minus(value: Any) -> int:
    return -_int(value)


def text(value: Any) -> str:
    """A value interpolated into a string."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(_int(value))
    if isinstance(value, (float, Type)):
        raise Unsure  # CUE's decimal formatting
    raise Bottom


def _ordered(x: Any, y: Any) -> tuple[Any, Any]:
    if isinstance(x, str) and isinstance(y, str):
        return x.encode(), y.encode()
    return _number(x), _number(y)


def _and(x: Any, y: Any) -> bool:
    if x.__class__ is bool and y.__class__ is bool:
        return x and y
    raise Unsure  # CUE's && and || on other kinds: not modelled


def _or(x: Any, y: Any) -> bool:
    if x.__class__ is bool and y.__class__ is bool:
        return x or y
    raise Unsure


def _plus(x: Any, y: Any) -> Any:
    if isinstance(x, str) and isinstance(y, str):
        return sized(x + y)
    return _int(x) + _int(y)


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "==": lambda x, y: equal(x, y),
    "!=": lambda x, y: not equal(x, y),
    "<": lambda x, y: (lambda a, b: a < b)(*_ordered(x, y)),
    "<=": lambda x, y: (lambda a, b: a <= b)(*_ordered(x, y)),
    ">": lambda x, y: (lambda a, b: a > b)(*_ordered(x, y)),
    ">=": lambda x, y: (lambda a, b: a >= b)(*_ordered(x, y)),
    "&&": _and,
    "||": _or,
    "&": unify,
    "+": _plus,
    "-": lambda x, y: _int(x) - _int(y),
    "*": lambda x, y: _int(x) * _int(y),
}


def joined(parts: list[str]) -> str:
    """An interpolation's text."""
    return sized("".join(parts))


def pairs(value: Any) -> Iterator[tuple[Any, Any]]:
    """What `for k, v in value` ranges over: a list's indexes and elements, a struct's
    regular fields (data in key order, as CUE holds JSON it was given)."""
    if isinstance(value, list):
        return iter(enumerate(value))
    if isinstance(value, LazyList):
        return iter(enumerate(list(value)))
    if isinstance(value, Settings):
        return iter(value.items())
    if isinstance(value, dict):
        if _declared(value):
            raise Unsure
        return iter(sorted(value.items(), key=lambda kv: kv[0].encode()))
    if isinstance(value, Struct):
        return iter([(label, value.field(label)) for label in value.labels()])
    if isinstance(value, Type):
        raise Unsure
    raise Bottom


_CONTRACT_SHAPES = (frozenset({"kind", "object", "pods", "containers"}),
                    frozenset({"path", "jobPath", "job", "ancestor", "spec"}),
                    frozenset({"path", "job", "ancestor", "init", "container"}),
                    frozenset({"numNodes", "gpus", "replicatedJobs"}),
                    frozenset({"name", "namespace", "labels", "annotations"}))


def _declared(value: dict[str, Any]) -> bool:
    """Whether a struct of the input is one the contract declares fields of (the input,
    a pod or container entry, the summary, the TrainJob): CUE orders those fields as the
    contract does, which the plans do not model."""
    keys = value.keys()
    return any(shape <= keys for shape in _CONTRACT_SHAPES) and kind_of(value) == "struct"
