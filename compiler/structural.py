"""A fast structural check of inputs against the CRD type trees.

Before anything is compiled, each TrainJob and runtime is walked once against the types the
CRD declares (generated into `compiler._crd_types`): wrong JSON types and missing required
properties become error diagnostics with the field path, so the core never sees a malformed
document. Full schema, enum and CEL validation belong to `tjc validate`. Pure.
"""

from __future__ import annotations

from typing import Any

from compiler._crd_types import TYPES
from compiler.defaults import KIND_KEYS
from compiler.diagnostics import Diagnostic, Path, Severity, error

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "ios": (int, str),
}
_NAMES = {dict: "object", list: "array", str: "string", int: "integer", float: "number",
          bool: "boolean", type(None): "null"}


def check(kind: str, doc: dict[str, Any], *, subject: str) -> list[Diagnostic]:
    """Every type mismatch and missing required field of `doc`."""
    out: list[Diagnostic] = []
    _walk(doc, TYPES[KIND_KEYS[kind]], (), out, subject)
    return out


def prune(kind: str, doc: dict[str, Any], *, subject: str
          ) -> tuple[dict[str, Any], list[Diagnostic]]:
    """A copy without the fields the CRD does not declare, and a warning for each.

    The API server prunes unknown fields of custom resources (or rejects them under strict
    field validation), so upstream never sees them; neither does the compiler.
    """
    notes: list[Diagnostic] = []
    pruned = _prune(doc, TYPES[KIND_KEYS[kind]], (), notes, subject)
    return pruned, notes


def _prune(value: Any, tree: dict[str, Any], path: Path, notes: list[Diagnostic],
           subject: str) -> Any:
    if isinstance(value, dict):
        if tree.get("x") or (tree.get("t") == "object" and "p" not in tree and "a" not in tree):
            return value
        props, extra = tree.get("p", {}), tree.get("a")
        out = {}
        for name, item in value.items():
            sub = props.get(name, extra)
            if sub is None:
                notes.append(Diagnostic(
                    Severity.WARNING, "TJC-UNKNOWN-FIELD",
                    "unknown field; the API server drops it (or rejects the object under "
                    "strict field validation), so it has no effect", (*path, name),
                    subject=subject))
                continue
            out[name] = _prune(item, sub, (*path, name), notes, subject)
        return out
    if isinstance(value, list) and "i" in tree:
        return [_prune(item, tree["i"], (*path, i), notes, subject)
                for i, item in enumerate(value)]
    return value


def _type_ok(value: Any, expected: str) -> bool:
    if isinstance(value, bool) and expected not in ("boolean",):
        return False
    return isinstance(value, _JSON_TYPES.get(expected, (object,)))


def _walk(value: Any, tree: dict[str, Any], path: Path, out: list[Diagnostic],
          subject: str) -> None:
    expected = tree.get("t")
    if value is None:
        return
    if expected and not _type_ok(value, expected):
        got = _NAMES.get(type(value), type(value).__name__)
        out.append(error("TJC-SCHEMA-TYPE", f"expected {_article(expected)}, got {got}",
                         path, subject=subject))
        return
    if isinstance(value, dict):
        for name in tree.get("r", ()):
            if name not in value:
                out.append(error("TJC-SCHEMA-REQUIRED", f"required field {name!r} is missing",
                                 path, subject=subject))
        props, extra = tree.get("p", {}), tree.get("a")
        for name, item in value.items():
            sub = props.get(name, extra)
            if sub is not None:
                _walk(item, sub, (*path, name), out, subject)
    elif isinstance(value, list) and "i" in tree:
        for index, item in enumerate(value):
            _walk(item, tree["i"], (*path, index), out, subject)


def _article(expected: str) -> str:
    names = {"ios": "integer or string", "object": "an object", "array": "an array",
             "integer": "an integer", "string": "a string", "boolean": "a boolean",
             "number": "a number"}
    return names.get(expected, expected)
