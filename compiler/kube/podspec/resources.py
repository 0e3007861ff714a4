"""Container resources as core validation has them (`ValidateContainerResourceRequirements`,
`validateContainerResourceName`, `ValidateResourceQuantityValue`):

- every resource name is a container resource: cpu, memory, ephemeral-storage or
  hugepages-*, a name under a `kubernetes.io/` domain, or an extended resource (a qualified
  `domain/name`);
- a hugepages amount is a whole number of its pages;
- every amount is 0 or more, and an extended resource's a whole number (rules
  `TJC-RESOURCE-NEGATIVE` and `TJC-RESOURCE-NOT-INTEGER` of `compiler.kube.podresources`,
  which reports them where an amount is written, `compiler.core.podrefusals` where
  resourcesPerNode lands);
- `Scope.PODS` only (the TrainJob's `resourcesPerNode` replaces the trainer's resources):
  a request is at most its limit; for a resource that cannot be overcommitted (an extended
  resource, hugepages) the request equals the limit, and a request without a limit is refused;
  hugepages come with cpu or memory.

Amounts are compared as the v1 defaults leave them: rounded up to the milli unit.
Called by `compiler.kube.podspec.check`; pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from functools import lru_cache
from typing import Any

from compiler.kube.objectmeta import is_qualified_name
from compiler.kube.podresources import amount_problem, is_extended
from compiler.kube.podspec.base import Problem, Scope, dicts, shown
from compiler.kube.quantity import QuantityError, parse

RULE = "TJC-POD-RESOURCES"
LISTS = ("containers", "initContainers")
CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
# what `IsStandardResourceName` takes besides the container resources (quota names)
_STANDARD = ("requests.cpu", "requests.memory", "requests.ephemeral-storage", "limits.cpu",
             "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
             "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims",
             "storage", "requests.storage", "services.nodeports", "services.loadbalancers")


def problems(pod: dict[str, Any], scope: Scope) -> Iterator[Problem]:
    """Every resources problem of the pod spec's containers and init containers."""
    for key in LISTS:
        for index, container in dicts(pod.get(key)):
            holder = container.get("resources")
            if isinstance(holder, dict):
                yield from requirements(holder, (key, index, "resources"), scope)


def requirements(holder: dict[str, Any], at: tuple[Any, ...], scope: Scope
                 ) -> Iterator[Problem]:
    """One `resources` (or `resourcesPerNode`) field."""
    groups = {g: holder[g] for g in ("limits", "requests") if isinstance(holder.get(g), dict)}
    for group, amounts in groups.items():
        for name, amount in amounts.items():
            for rule, msg in _findings(name, amount if _hashable(amount) else None):
                yield Problem(rule, (*at, group, name), msg)
    if scope >= Scope.PODS:
        yield from _relations(groups.get("requests", {}), groups.get("limits", {}), at)


def name_problems(name: str) -> list[str]:
    """`validateContainerResourceName`: what is wrong with a container's resource name."""
    found = [f"is not a qualified name: {msg}" for msg in is_qualified_name(name)]
    if found:
        return found
    if "/" not in name:
        if name in CONTAINER_RESOURCES or name.startswith("hugepages-"):
            return []
        if name not in _STANDARD and not name.startswith("requests.hugepages-"):
            found.append("must be a standard resource type or fully qualified")
        return [*found, "must be a standard resource for containers: cpu, memory, "
                "ephemeral-storage or hugepages-<size>"]
    if "kubernetes.io/" not in name and not is_extended(name):
        return ["doesn't follow extended resource name standard (a qualified domain/name)"]
    return []


def _value(amount: Any) -> Fraction | None:
    if isinstance(amount, bool) or not isinstance(amount, (str, int, float)):
        return None
    try:
        return parse(amount).value
    except QuantityError:
        return None


def _defaulted(amount: Any) -> Fraction | None:
    """An amount as the v1 defaults leave it (`_milli`), None when it is no quantity."""
    return _defaulted_quantity(amount) if _hashable(amount) else None


@lru_cache(maxsize=1024, typed=True)  # bounded; a repository's amounts repeat
def _defaulted_quantity(amount: str | int | float | None) -> Fraction | None:
    value = _value(amount)
    return None if value is None else _milli(value)


def _milli(value: Fraction) -> Fraction:
    """`SetDefaults_ResourceList`: rounded up (away from zero) to the milli unit."""
    scaled = value * 1000
    whole = math.ceil(scaled) if value > 0 else math.floor(scaled)
    return Fraction(whole, 1000)


def _hashable(amount: Any) -> bool:
    """Whether an amount is a scalar (a key of the cached `_findings`, `_defaulted_quantity`)."""
    return amount is None or isinstance(amount, (str, int, float))


@lru_cache(maxsize=1024, typed=True)  # bounded; a repository's names and amounts repeat
def _findings(name: str, amount: str | int | float | bool | None
              ) -> tuple[tuple[str, str], ...]:
    """(rule, message) of each problem of one amount of one resource (its name's, then its
    value's; a value of another type has only its name's)."""
    out = [(RULE, f"resource name {name!r}: {msg}") for msg in name_problems(name)]
    if isinstance(amount, bool) or not isinstance(amount, (str, int)):
        return tuple(out)
    problem = amount_problem(name, amount)
    if problem is not None:
        out.append(problem)
    value = _value(amount)
    if name.startswith("hugepages-") and value is not None and not _whole_pages(name, value):
        out.append((RULE, f"{name} is {shown(amount)}: expected a whole number of "
                    f"{name[len('hugepages-'):]} pages"))
    return tuple(out)


def _whole_pages(name: str, value: Fraction) -> bool:
    """`IsHugePageResourceValueDivisible`: the amount (rounded up) is a multiple of the page
    size the name gives, a positive whole number of bytes."""
    size = _value(name[len("hugepages-"):])
    if size is None or size <= 0 or size.denominator != 1:
        return False
    return math.ceil(value) % int(size) == 0


def overcommit(name: str) -> bool:
    """`IsOvercommitAllowed`: a native resource (no domain, or kubernetes.io) but hugepages."""
    return ("/" not in name or "kubernetes.io/" in name) and not name.startswith("hugepages-")


def _relations(requests: dict[str, Any], limits: dict[str, Any], at: tuple[Any, ...]
               ) -> Iterator[Problem]:
    for name, amount in requests.items():
        request = _defaulted(amount)
        if request is None:
            continue
        if name not in limits:
            if not overcommit(name):
                yield Problem(RULE, (*at, "limits"), f"{name} is requested without a limit; "
                              "a resource that cannot be overcommitted needs a limit equal to "
                              "the request")
            continue
        limit = _defaulted(limits[name])
        if limit is None:
            continue
        if not overcommit(name) and request != limit:
            yield Problem(RULE, (*at, "requests"), f"{name} request {shown(amount)} differs from "
                          f"its limit {shown(limits[name])}; expected them equal")
        elif request > limit:
            yield Problem(RULE, (*at, "requests"), f"{name} request {shown(amount)} is above "
                          f"its limit {shown(limits[name])}; expected at most the limit")
    hugepages = any(n.startswith("hugepages-") for n in (*requests, *limits))
    if hugepages and not any(n in ("cpu", "memory") for n in (*requests, *limits)):
        yield Problem(RULE, at, "hugepages are asked for without cpu or memory; expected cpu "
                      "or memory too")
