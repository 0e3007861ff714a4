"""`per_object`: a function of one object computed once per object, by identity."""

from __future__ import annotations

from typing import Any

from compiler.common import perobject
from compiler.common.perobject import per_object


def test_once_per_object_and_again_for_an_equal_copy() -> None:
    calls: list[int] = []

    @per_object
    def size(obj: dict[str, Any]) -> int:
        calls.append(id(obj))
        return len(obj)

    runtime = {"a": 1}
    assert size(runtime) == 1 and size(runtime) == 1
    assert len(calls) == 1
    copy = dict(runtime)
    assert size(copy) == 1
    assert len(calls) == 2  # equal, but another object: its own entry


def test_an_entry_keeps_its_object_so_its_id_is_not_reused() -> None:
    @per_object
    def ident(obj: dict[str, Any]) -> int:
        return id(obj)

    first_id = ident({"x": 1})
    assert ident({"y": 2}) != first_id  # the first dict is still held by the entry


def test_bounded_then_starts_again() -> None:
    calls = 0

    @per_object
    def count(obj: object) -> int:
        nonlocal calls
        calls += 1
        return calls

    kept = [object() for _ in range(perobject.LIMIT + 2)]
    for obj in kept:
        count(obj)
    assert calls == perobject.LIMIT + 2
    count(kept[-1])  # entered after the restart: still remembered
    assert calls == perobject.LIMIT + 2
    count(kept[0])  # dropped by the restart: computed again
    assert calls == perobject.LIMIT + 3
