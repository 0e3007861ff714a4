"""`per_object`: a runtime's facts computed once and kept by the admitted runtime itself."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from compiler.common.perobject import Admitted, per_object
from compiler.core.admission import admit_runtime
from compiler.io.builtin import builtin_runtimes


def test_once_per_admitted_runtime_and_again_for_an_equal_copy() -> None:
    calls: list[int] = []

    @per_object
    def size(obj: dict[str, Any]) -> int:
        calls.append(id(obj))
        return len(obj)

    runtime = Admitted({"a": 1})
    assert size(runtime) == 1 and size(runtime) == 1
    assert len(calls) == 1
    copy = Admitted(dict(runtime))
    assert size(copy) == 1
    assert len(calls) == 2  # equal, but another runtime: its own facts


def test_a_plain_mapping_is_not_remembered_anywhere() -> None:
    """Only an admitted runtime owns facts: nothing outside it keeps an entry (before, a
    module-level table kept up to 256 objects alive)."""
    calls = 0

    @per_object
    def count(obj: object) -> int:
        nonlocal calls
        calls += 1
        return calls

    plain = {"a": 1}
    count(plain)
    count(plain)
    assert calls == 2


class _Fact:
    """A fact that can be watched (a weak reference) after its runtime is gone."""


def test_the_facts_live_and_die_with_their_runtime() -> None:
    @per_object
    def fact(obj: dict[str, Any]) -> _Fact:
        return _Fact()

    runtime = Admitted({"b": 1, "a": 2})
    kept = fact(runtime)
    assert fact(runtime) is kept and list(runtime.facts.values()) == [kept]
    gone = weakref.ref(kept)
    del runtime, kept
    gc.collect()
    assert gone() is None


def test_admission_gives_runtimes_that_own_their_facts() -> None:
    """What the webhook rules and the quirks work out of a runtime is kept in the runtime
    admission gave (the pipeline's checked runtime, a compile's prepared runtime)."""
    from compiler.core import webhook
    from compiler.core.release import DEFAULT

    runtime = next(iter(builtin_runtimes())).data
    typed, _ = admit_runtime(runtime)
    assert isinstance(typed, Admitted)
    facts = webhook._runtime_facts(typed, DEFAULT)
    assert webhook._runtime_facts(typed, DEFAULT) is facts
    assert [key for key in typed.facts if str(key[0]).endswith("_runtime_facts")], \
        sorted(map(str, typed.facts))
