"""Facts worked out once per runtime, kept by the runtime object itself.

Callers check many TrainJobs against one runtime, whose facts (its typed template, the rules
that apply to it, what the quirks need) do not depend on the TrainJob. Admission gives each
runtime as an `Admitted` mapping (`compiler.core.admission.admit_runtime`), which owns a
`facts` table: `per_object(f)` is `f`, computed once per `Admitted` object and kept in that
object's table, so the facts live exactly as long as the runtime that holds them (the pipeline
session's checked runtime, or the prepared runtime of a compile) and no table outside it grows.
For any other mapping `f` is computed each time. An `Admitted` runtime must not change after
its first use, as admitted runtimes do not. Pure.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R")


class Admitted(dict[str, Any]):
    """A runtime as admission gives it, and the facts worked out from it (`facts`)."""

    __slots__ = ("facts",)

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.facts: dict[Any, Any] = {}


def per_object(function: Callable[..., R]) -> Callable[..., R]:
    """`function`, kept in its first argument's `facts` when that is an `Admitted` runtime
    (by the other arguments too, which must be hashable: a release's version)."""
    name = f"{function.__module__}.{function.__qualname__}"

    @functools.wraps(function)
    def once(obj: Any, *args: Any) -> R:
        facts = obj.facts if isinstance(obj, Admitted) else None
        if facts is None:
            return function(obj, *args)
        key = (name, *args) if args else name
        if key not in facts:
            facts[key] = function(obj, *args)
        found: R = facts[key]
        return found

    return once
