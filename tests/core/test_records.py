"""`compiler.common.records.dataclass` behaves as `dataclasses.dataclass` (the oracle: the
standard library's own classes, made from the same class bodies): equality, hashing under
every combination of `eq`, `frozen`, `unsafe_hash` and an explicit `__hash__`, order, repr
(also of a value that contains itself), fields left out of comparison or repr, inheritance,
methods a class defines itself, `fields` and `replace`."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from compiler.common import records


def _pair(body: Callable[[], type], **params: Any) -> tuple[Any, Any]:
    """The same class body made by both decorators (or the exception each raises)."""
    out: list[Any] = []
    for make in (dataclasses.dataclass, records.dataclass):
        try:
            out.append(make(**params)(body()))
        except (TypeError, ValueError) as exc:
            out.append(type(exc))
    return out[0], out[1]


def _plain() -> type:
    class Point:
        x: int
        y: list[int] = dataclasses.field(default_factory=list)
        note: str = dataclasses.field(default="", compare=False, repr=False)
    return Point


def _hashed() -> type:
    class Point:
        x: int
        y: int = 0

        def __hash__(self) -> int:
            return 7
    return Point


def _behaviour(cls: Any) -> Any:
    """What a user of the class can see."""
    if isinstance(cls, type) and issubclass(cls, BaseException):
        return cls
    a, b, c = cls(1), cls(1), cls(2)
    try:
        hashes: Any = (hash(a) == hash(b), hash(a) == hash(cls(1, 0)))
    except TypeError:
        hashes = "unhashable"
    return (a == b, a == c, a != c, a == (1,), repr(a).split(".")[-1], hashes,
            cls.__hash__ is None, [f.name for f in dataclasses.fields(cls)])


@pytest.mark.parametrize("eq,frozen,unsafe_hash",
                         list(itertools.product((True, False), repeat=3)))
@pytest.mark.parametrize("body", [_plain, _hashed], ids=["plain", "explicit-hash"])
def test_the_same_class_as_dataclasses(body: Callable[[], type], eq: bool, frozen: bool,
                                       unsafe_hash: bool) -> None:
    want, got = _pair(body, eq=eq, frozen=frozen, unsafe_hash=unsafe_hash)
    assert _behaviour(got) == _behaviour(want)


def test_frozen_order_replace_and_fields() -> None:
    def body() -> type:
        class Version:
            major: int
            minor: int = 0
            label: str = dataclasses.field(default="", compare=False)
        return Version
    want, got = _pair(body, frozen=True, order=True)
    for cls in (want, got):
        a, b = cls(1, 2, "x"), cls(1, 3)
        assert (a < b, a <= b, a > b, a >= b, sorted([b, a]) == [a, b]) == \
            (True, True, False, False, True)
        assert a == cls(1, 2, "y") and hash(a) == hash(cls(1, 2, "y"))
        with pytest.raises(dataclasses.FrozenInstanceError):
            a.major = 3
        assert dataclasses.replace(a, minor=5) == cls(1, 5)
        with pytest.raises(TypeError):
            _ = a < (1, 2)
    assert _pair(body, order=True, eq=False) == (ValueError, ValueError)


def test_repr_of_a_value_that_contains_itself_and_of_a_subclass() -> None:
    def body() -> type:
        class Node:
            name: str
            children: list[Any] = dataclasses.field(default_factory=list)
        return Node
    want, got = _pair(body)
    shown = []
    for cls in (want, got):
        node = cls("a")
        node.children.append(node)
        shown.append(repr(node))

        class Leaf(cls):  # type: ignore[valid-type, misc]
            pass
        shown.append(repr(Leaf("b")))
    assert shown[:2] == shown[2:] and shown[0].endswith("Node(name='a', children=[...])")


def test_a_method_the_class_defines_is_kept() -> None:
    @records.dataclass(frozen=True)
    class Tag:
        name: str

        def __eq__(self, other: object) -> bool:
            return True

        def __repr__(self) -> str:
            return "tag"
    assert Tag("a") == Tag("b") and repr(Tag("a")) == "tag"
    with pytest.raises(TypeError):
        @records.dataclass(order=True)
        class Bad:
            name: str

            def __lt__(self, other: object) -> bool:  # type: ignore[misc]
                return True
