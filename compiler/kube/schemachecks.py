"""The keyword checks of a compiled CRD schema node (`compiler.kube.schematree`), as closures.

`value_checks(raw, types, node)` turns the keywords of one schema that look at a value itself
(enum, format, bounds, multipleOf, lengths, pattern, item and property counts, allOf, anyOf,
oneOf, not) into a tuple of functions `check(value, path, out)` built once, so a document's
walk calls only the checks its schema has. Each appends `TJC-SCHEMA-<KEYWORD>` errors to `out`.
Pure.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping, Sized
from typing import Any, Final, Protocol

from compiler.common.diagnostics import Diagnostic, Path, Severity

SUBJECT: Final = "document"
INT32: Final = (-(2**31), 2**31 - 1)
INT64: Final = (-(2**63), 2**63 - 1)
_DATE_TIME: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_SHOW_LIMIT: Final = 80

Out = list[Diagnostic]
Check = Callable[[Any, Path, Out], None]


class Checker(Protocol):
    """A compiled schema: reports every problem of a value."""

    def check(self, value: Any, path: Path, out: Out) -> None:
        """Append the problems of `value` (found at `path`) to `out`."""


NodeFactory = Callable[[Mapping[str, Any]], Checker]


def fail(rule: str, message: str, path: Path) -> Diagnostic:
    """A `TJC-SCHEMA-<rule>` error."""
    return Diagnostic(Severity.ERROR, f"TJC-SCHEMA-{rule}", message, path, subject=SUBJECT)


def show(value: Any) -> str:
    """A value as JSON, cut short when long."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= _SHOW_LIMIT else text[:_SHOW_LIMIT - 3] + "..."


def freeze(value: Any) -> Any:
    """A hashable identity for list uniqueness (JSON equality, booleans apart from numbers)."""
    if isinstance(value, bool) or value is None:
        return ("b", value)
    if isinstance(value, int | float | str):
        return value
    return ("j", json.dumps(value, sort_keys=True, default=str))


def _count(n: int, noun: str, plural: str = "") -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def value_checks(raw: Mapping[str, Any], types: tuple[str, ...] | None, node: NodeFactory
                 ) -> tuple[Check, ...]:
    """The keyword checks of one schema that look at the value itself, in a fixed order
    (`node` compiles the subschemas of allOf, anyOf, oneOf and not)."""
    checks: list[Check | None] = [
        _enum(raw["enum"]) if "enum" in raw else None,
        _format(raw.get("format"), types),
        _bound(raw, "minimum"), _bound(raw, "maximum"),
        _multiple_of(raw.get("multipleOf")),
        _size(raw.get("minLength"), "MINLENGTH", str, "character", at_least=True),
        _size(raw.get("maxLength"), "MAXLENGTH", str, "character", at_least=False),
        _pattern(raw.get("pattern")),
        _size(raw.get("minItems"), "MINITEMS", list, "item", at_least=True),
        _size(raw.get("maxItems"), "MAXITEMS", list, "item", at_least=False),
        _size(raw.get("minProperties"), "MINPROPERTIES", dict, "propert", at_least=True),
        _size(raw.get("maxProperties"), "MAXPROPERTIES", dict, "propert", at_least=False),
        *_combinators(raw, types, node),
    ]
    return tuple(c for c in checks if c is not None)


def _enum(allowed: list[Any]) -> Check:
    frozen = {freeze(v) for v in allowed}
    listed = ", ".join(show(v) for v in allowed)

    def check(value: Any, path: Path, out: Out) -> None:
        if freeze(value) not in frozen:
            out.append(fail("ENUM", f"{show(value)} is not one of {listed}", path))
    return check


def _format(name: Any, types: tuple[str, ...] | None) -> Check | None:
    if name in ("int32", "int64"):
        low, high = INT32 if name == "int32" else INT64

        def check_int(value: Any, path: Path, out: Out) -> None:
            if _number(value) and not low <= value <= high:
                out.append(fail("FORMAT", f"{show(value)} does not fit in {name}; expected "
                                  f"a value from {low} to {high}", path))
        return check_int
    if name == "date-time":
        def check_time(value: Any, path: Path, out: Out) -> None:
            if isinstance(value, str) and not _DATE_TIME.fullmatch(value):
                out.append(fail("FORMAT", f"{show(value)} is not a date-time; expected RFC "
                                  "3339 such as 2006-01-02T15:04:05Z", path))
        return check_time
    return None


def _bound(raw: Mapping[str, Any], keyword: str) -> Check | None:
    limit = raw.get(keyword)
    if not _number(limit):
        return None
    lower = keyword == "minimum"
    exclusive = raw.get("exclusiveMinimum" if lower else "exclusiveMaximum") is True
    rule = keyword.upper()
    if lower:
        words = "is not greater than the exclusive minimum" if exclusive else \
            "is less than the minimum"
    else:
        words = "is not less than the exclusive maximum" if exclusive else \
            "is greater than the maximum"

    def check(value: Any, path: Path, out: Out) -> None:
        if not _number(value):
            return
        if lower:
            bad = value <= limit if exclusive else value < limit
        else:
            bad = value >= limit if exclusive else value > limit
        if bad:
            out.append(fail(rule, f"{show(value)} {words} {show(limit)}", path))
    return check


def _multiple_of(factor: Any) -> Check | None:
    if not _number(factor) or factor <= 0:
        return None

    def check(value: Any, path: Path, out: Out) -> None:
        if not _number(value):
            return
        quotient = value / factor
        if not (math.isfinite(quotient) and quotient == int(quotient)):
            out.append(fail("MULTIPLEOF", f"{show(value)} is not a multiple of {show(factor)}",
                              path))
    return check


def _size(limit: Any, rule: str, kind: type[Sized], noun: str, *, at_least: bool) -> Check | None:
    if not _number(limit):
        return None
    single, plural = (noun + "y", noun + "ies") if noun == "propert" else (noun, noun + "s")
    bound = "at least" if at_least else "at most"
    expected = f"must have {bound} {_count(int(limit), single, plural)}"

    def check(value: Any, path: Path, out: Out) -> None:
        if isinstance(value, kind):
            size = len(value)
            if (size < limit) if at_least else (size > limit):
                out.append(fail(rule, f"{expected}, has {size}", path))
    return check


@functools.cache
def _compiled_pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _pattern(pattern: Any) -> Check | None:
    if not isinstance(pattern, str):
        return None
    regex = _compiled_pattern(pattern)

    def check(value: Any, path: Path, out: Out) -> None:
        if isinstance(value, str) and regex.search(value) is None:
            out.append(fail("PATTERN", f"{show(value)} does not match {pattern}", path))
    return check


def _combinators(raw: Mapping[str, Any], types: tuple[str, ...] | None, node: NodeFactory
                 ) -> list[Check]:
    """allOf / anyOf / oneOf / not. The `anyOf: [{type: integer}, {type: string}]` that
    accompanies `x-kubernetes-int-or-string` is what the type check already does."""
    checks: list[Check] = []
    for sub in raw.get("allOf") or ():
        checks.append(node(sub).check)
    branches = raw.get("anyOf")
    if branches and not (types == ("ios",) and all(set(b) <= {"type"} for b in branches)):
        checks.append(_alternatives([node(b) for b in branches], "ANYOF"))
    if raw.get("oneOf"):
        checks.append(_alternatives([node(b) for b in raw["oneOf"]], "ONEOF"))
    if isinstance(raw.get("not"), dict):
        checks.append(_negation(node(raw["not"])))
    return checks


def _alternatives(nodes: list[Checker], rule: str) -> Check:
    def check(value: Any, path: Path, out: Out) -> None:
        matched = 0
        for node in nodes:
            probe: Out = []
            node.check(value, path, probe)
            matched += not probe
        if rule == "ANYOF" and not matched:
            out.append(fail(rule, f"matches none of the {len(nodes)} allowed schemas", path))
        elif rule == "ONEOF" and matched != 1:
            out.append(fail(rule, f"matches {matched} of the {len(nodes)} alternative schemas; "
                              "expected exactly one", path))
    return check


def _negation(node: Checker) -> Check:
    def check(value: Any, path: Path, out: Out) -> None:
        probe: Out = []
        node.check(value, path, probe)
        if not probe:
            out.append(fail("NOT", "matches a schema it must not match", path))
    return check
