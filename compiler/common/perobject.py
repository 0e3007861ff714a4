"""Facts worked out once per object: a function of one (unhashable) object remembered by the
object's identity.

Callers check many TrainJobs against one runtime document, whose facts (its typed template,
the rules that apply to it) do not depend on the TrainJob. `per_object(f)` is `f`, computed
once per object it is given; an entry keeps its object, so the object's id is not reused
while it is remembered, and at most `LIMIT` objects are remembered (then it starts again).
The objects must not change after their first use, as runtime documents do not. Pure.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R")
LIMIT = 256


def per_object(function: Callable[[Any], R]) -> Callable[[Any], R]:
    """`function`, remembered per argument object (by identity)."""
    remembered: dict[int, tuple[Any, R]] = {}

    @functools.wraps(function)
    def once(obj: Any) -> R:
        hit = remembered.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        if len(remembered) > LIMIT:
            remembered.clear()
        value = function(obj)
        remembered[id(obj)] = (obj, value)
        return value

    return once
