"""Resource amounts the Pods would be refused for, found before any Pod exists.

The CRDs accept any quantity in `resources` and `resourcesPerNode`; the API server refuses
the Pod later (`ValidateResourceRequirements` of Kubernetes' core validation): every amount
must be greater than or equal to 0, and an extended resource (a vendor's device such as
`nvidia.com/gpu`: a qualified name with a domain that is not `kubernetes.io`) must be a whole
number (and one whose thousandths fit an int64: `MILLI_OVERFLOW`). A TrainJob or runtime that
asks for -1 or 0.5 GPUs is taken by the cluster and gets its JobSet, whose Pods never start: an
error about the Pods (subject `pods`), so render still prints what the controller builds and
exits 1. Pure; called by `compiler.core.admission.pod_amounts` for every document (which
leaves the amounts a TrainJob's resourcesPerNode sets or may replace to the compile) and,
through `amount_problem`, by `compiler.kube.podspec` and `compiler.core.podrefusals`.

Most documents have no such amount, and are shown to have none without a walk of every value
(`_clean`); only the others are walked, in document order, for the diagnostics.
"""

from __future__ import annotations

import functools
import marshal
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from compiler.common.diagnostics import Diagnostic, Path, error
from compiler.common.jsondata import get_path
from compiler.kube.objectmeta import is_qualified_name
from compiler.kube.quantity import QuantityError, parse

_HOLDERS = frozenset({"resources", "resourcesPerNode"})
# An extended resource's amount in thousandths must fit an int64: the API server's integer
# check (`ValidateResourceQuantityValue`, MilliValue() % 1000) overflows beyond, and refuses
# most such amounts (some spellings pass: tjc refuses them all).
MILLI_OVERFLOW = Fraction(2**63, 1000)
_MAX_WALK = 100
# The keys on the way from a document's root to every `resources` and `resourcesPerNode` field
# of the TrainJob, TrainingRuntime and ClusterTrainingRuntime CRDs (a test derives them from
# the schemas). A holder elsewhere (an unknown or wrongly typed value keeps what it holds) is
# still found: `resources` then shows in what `_clean_on_routes` sets aside, and `_walk` runs.
_ROUTE = frozenset({
    "spec", "trainer", "runtimePatches", "trainingRuntimeSpec", "template", "replicatedJobs",
    "containers", "initContainers", "ephemeralContainers", "volumes", "ephemeral",
    "volumeClaimTemplate", "volumeClaimPolicies", "templates"})


def is_extended(name: str) -> bool:
    """`IsExtendedResourceName`: not native (no `/`, or a kubernetes.io domain), not a quota
    `requests.` name, and a qualified name once prefixed with `requests.`."""
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.") and \
        not is_qualified_name(f"requests.{name}")


def validate(data: Any) -> list[Diagnostic]:
    """Every negative amount and every fractional extended-resource amount in a document."""
    if _clean(data):
        return []
    out: list[Diagnostic] = []
    _walk(data, (), 0, out)
    return out


def _clean(data: Any) -> bool:
    """Whether the document provably has no amount `_walk` would report, found without
    walking all of it. Every key named `resources...` puts its bytes into the document's
    `marshal` bytes (marshal takes only plain data, whose keys are plain strings), so when
    they hold `resources` once and a TrainJob has `spec.trainer.resourcesPerNode`, that is
    its only holder; else `_clean_on_routes` looks. False when in doubt: then `_walk` runs."""
    try:
        count = marshal.dumps(data, 0).count(b"resources")
    except (ValueError, TypeError, RecursionError):
        return False
    if count == 0:
        return True
    if count == 1:
        holder = get_path(data, "spec", "trainer", "resourcesPerNode")
        if isinstance(holder, dict):
            return not _bad_holder(holder)
    return _clean_on_routes(data)


def _clean_on_routes(data: Any) -> bool:
    """`_clean` for any plain document: only the keys on `_ROUTE` are followed and the
    holders met there are checked; every other collection met on the way is set aside, and
    none of them holds a holder when `resources` is nowhere in their `marshal` bytes."""
    aside: list[Any] = []
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, dict):
                    if key in _HOLDERS:
                        if _bad_holder(item):
                            return False
                        aside.append(item)  # what else it holds
                    elif key in _ROUTE:
                        stack.append(item)
                    else:
                        aside.append(item)
                elif isinstance(item, list):
                    (stack if key in _ROUTE else aside).append(item)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, (dict, list)):
                    stack.append(item)
    try:
        return b"resources" not in marshal.dumps(aside, 0)
    except (ValueError, TypeError, RecursionError):
        return False


def _bad_holder(holder: dict[str, Any]) -> bool:
    """Whether `_amounts` would yield anything for this holder. An amount can be negative
    only with a minus sign, and fractional-and-refused only for an extended resource, whose
    name has a `/`; other amounts are not looked up."""
    for group in ("requests", "limits"):
        amounts = holder.get(group)
        if isinstance(amounts, dict):
            for name, amount in amounts.items():
                if not isinstance(name, str) or isinstance(amount, bool):
                    continue
                if isinstance(amount, str):
                    if "-" not in amount and "/" not in name:
                        continue
                elif not isinstance(amount, int):
                    continue
                if _problem(name, amount) is not None:
                    return True
    return False


def _walk(value: Any, path: Path, depth: int, out: list[Diagnostic]) -> None:
    """Depth-first, in document order, with paths and the depth limit; only collections are
    entered (scalars hold nothing)."""
    if depth > _MAX_WALK:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict):
                if key in _HOLDERS:
                    out.extend(_amounts(item, (*path, key)))
                _walk(item, (*path, key), depth + 1, out)
            elif isinstance(item, list):
                _walk(item, (*path, key), depth + 1, out)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, (dict, list)):
                _walk(item, (*path, i), depth + 1, out)


def _amounts(holder: dict[str, Any], path: Path) -> Iterator[Diagnostic]:
    for group in ("requests", "limits"):
        amounts = holder.get(group)
        if not isinstance(amounts, dict):
            continue
        for name, amount in amounts.items():
            yield from _amount(name, amount, (*path, group, name))


def _amount(name: str, amount: Any, path: Path) -> Iterator[Diagnostic]:
    if isinstance(amount, bool) or not isinstance(amount, (str, int)):
        return
    problem = _problem(name, amount) if isinstance(name, str) else None
    if problem is not None:
        yield error(problem[0], problem[1], path, subject="pods")


def amount_problem(name: str, amount: str | int) -> tuple[str, str] | None:
    """(rule, message) of one amount of one resource, or None (`compiler.kube.podspec`)."""
    return _problem(name, amount)


@functools.lru_cache(maxsize=4096)
def _problem(name: str, amount: str | int) -> tuple[str, str] | None:
    """(rule, message) of one amount of one resource, or None (the same pairs recur)."""
    try:
        value = parse(amount).value
    except QuantityError:
        return None
    if value < 0:
        return ("TJC-RESOURCE-NEGATIVE", f"{name} is {amount}: must be greater than or "
                "equal to 0; the Pods would be refused")
    if is_extended(name) and value.denominator != 1:
        return ("TJC-RESOURCE-NOT-INTEGER", f"{name} is {amount}: an extended resource "
                "must be an integer; the Pods would be refused")
    if is_extended(name) and abs(value) >= MILLI_OVERFLOW:
        return ("TJC-RESOURCE-NOT-INTEGER", f"{name} is {amount}: an extended resource must "
                "be below 2^63 thousandths (9223372036854775.807); beyond, the API server's "
                "integer check overflows and the Pods would be refused")
    return None
