"""Known CEL rules confirmed in Python: a check that can only say "the rule holds".

The rules are those of the CRDs every input meets (the TrainJob's name and `managedBy`, a
runtime's `mlPolicy` and JobSet spec), by their exact text; on the usual input each decides
without the CEL runtime, whose loading is about 6 ms of a one-file start-up.

cel-cpp (through cel-expr-python, which has no switch for precompiled regular expressions)
compiles the pattern of `matches` again on every evaluation, most of the cost of evaluating
the TrainJob name rules, and every TrainJob has a name of its own, so a memo cannot help.
`holds(rules, self)` answers True only when each rule, by its exact text, has a check here
and every check accepts `self`; then evaluating the rules with CEL gives `true` for each.
Otherwise it answers False, which decides nothing: the caller evaluates with CEL as before,
which also gives every message, runtime error and non-bool result. So a check may be
stricter than its rule, never looser. A `self` the runtime would not convert (an integer
beyond 64 bits, a string that is not valid UTF-8, a tuple, another object) makes the CEL
evaluation fail, so no check accepts it. `tests/kube/test_cel_native.py` holds the checks against
the CEL runtime. Pure; called by `compiler.kube.cel` only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

# Kubeflow Trainer v2.3.0, TrainJob root: the name as an RFC 1035 label, at most 63 characters.
NAME_FORMAT = "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')"
NAME_LENGTH = "size(self.metadata.name) <= 63"

# RE2 without flags: `^` and `$` are the ends of the text, the classes are ASCII ranges.
# `fullmatch` anchors the same way (`$` in Python would also take a final line break).
_DNS_LABEL = re.compile(r"[a-z](?:[-a-z0-9]*[a-z0-9])?")
_INT64 = (-(2**63), 2**63)
_MAX_DEPTH = 32


def _name(self: Any) -> str | None:
    """`self.metadata.name` when it is an ASCII string (sizes in bytes and in code points
    agree, and it converts to a CEL string)."""
    meta = self.get("metadata") if type(self) is dict else None
    name = meta.get("name") if type(meta) is dict else None
    return name if type(name) is str and name.isascii() else None


def _name_format(self: Any) -> bool:
    name = _name(self)
    return name is not None and _DNS_LABEL.fullmatch(name) is not None


def _name_length(self: Any) -> bool:
    name = _name(self)
    return name is not None and len(name) <= 63


# TrainJob spec.managedBy: one of the two controllers.
MANAGED_BY = "self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']"
_MANAGERS = ("trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue")
# Runtimes' spec.mlPolicy: at most one framework's source.
ONE_POLICY = ("[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),"
              "has(self.flux)].filter(x, x).size() <= 1")
_SOURCES = ("torch", "mpi", "jax", "xgboost", "flux")
# The JobSet spec (runtimes' template, JobSet): InOrder start-up and dependsOn exclude each other.
STARTUP = ("!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && "
           "self.replicatedJobs.exists(x, has(x.dependsOn)))")


def _managed_by(self: Any) -> bool:
    return type(self) is str and self in _MANAGERS


def _one_policy(self: Any) -> bool:
    """`has` on a map is the key's presence, whatever its value."""
    return type(self) is dict and sum(key in self for key in _SOURCES) <= 1


def _startup(self: Any) -> bool:
    """The conjunction is false (so the rule holds) when a term is surely false: no
    `startupPolicy`, an order other than InOrder, or no replicated job with `dependsOn`. A
    false term decides CEL's `&&` even where another term errs."""
    if type(self) is not dict:
        return False
    policy = self.get("startupPolicy", _ABSENT)
    if policy is _ABSENT:
        return True
    order = policy.get("startupPolicyOrder") if type(policy) is dict else None
    if type(order) is str and order != "InOrder":
        return True
    jobs = self.get("replicatedJobs")
    return type(jobs) is list and all(type(job) is dict and "dependsOn" not in job
                                      for job in jobs)


_ABSENT = object()

CHECKS: Mapping[str, Callable[[Any], bool]] = {
    NAME_FORMAT: _name_format,
    NAME_LENGTH: _name_length,
    MANAGED_BY: _managed_by,
    ONE_POLICY: _one_policy,
    STARTUP: _startup,
}


def holds(rules: tuple[str, ...], self: Any) -> bool:
    """True when every rule of `rules` is known here and holds on `self` (the value the CEL
    runtime would get); False when that is not certain."""
    checks = [CHECKS.get(rule) for rule in rules]
    return (all(check is not None and check(self) for check in checks)
            and _convertible(self, _MAX_DEPTH))


def _convertible(value: Any, depth: int) -> bool:
    """Whether the CEL runtime surely converts `value` (JSON-like data within its ranges)."""
    kind = type(value)
    if isinstance(value, str) and kind is str:
        return value.isascii() or _utf8(value)
    if kind is bool or kind is float or value is None:
        return True
    if isinstance(value, int) and kind is int:
        return _INT64[0] <= value < _INT64[1]
    if depth <= 0:
        return False
    if kind is dict:
        return all(type(k) is str and _convertible(k, 0) and _convertible(v, depth - 1)
                   for k, v in value.items())
    if kind is list:
        return all(_convertible(v, depth - 1) for v in value)
    return False


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True
