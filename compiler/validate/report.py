"""Renderers for diagnostics: `text` (one line each), `json`, and `sarif` (SARIF 2.1.0), behind
one small registry. Pure: diagnostics in, text out; called by the CLI.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from compiler.diagnostics import Diagnostic, Severity
from compiler.version import __version__

SARIF_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTICE: "note"}


def text(diagnostics: Sequence[Diagnostic]) -> str:
    """One line per diagnostic, then a summary line when there is anything to say."""
    lines = [d.text() for d in diagnostics]
    counts = Counter(d.severity for d in diagnostics)
    if lines:
        lines.append(f"{counts[Severity.ERROR]} errors, {counts[Severity.WARNING]} warnings, "
                     f"{counts[Severity.NOTICE]} notices")
    return "".join(line + "\n" for line in lines)


def _as_dict(d: Diagnostic) -> dict[str, Any]:
    out: dict[str, Any] = {"severity": d.severity.value, "rule": d.rule, "message": d.message,
                           "path": d.field_path}
    if d.obj is not None:
        out["object"] = {"kind": d.obj.kind, "namespace": d.obj.namespace, "name": d.obj.name}
    out["locations"] = [{"file": loc.file, "line": loc.line, "column": loc.col}
                        for loc in d.locations]
    return out


def as_json(diagnostics: Sequence[Diagnostic]) -> str:
    """`{"diagnostics": [...], "summary": {...}}`, keys sorted."""
    counts = Counter(d.severity.value for d in diagnostics)
    doc = {"diagnostics": [_as_dict(d) for d in diagnostics],
           "summary": {s.value + "s": counts[s.value] for s in Severity}}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _sarif_result(d: Diagnostic) -> dict[str, Any]:
    result: dict[str, Any] = {"ruleId": d.rule, "level": SARIF_LEVELS[d.severity],
                              "message": {"text": _full_message(d)}}
    locations = []
    for loc in d.locations:
        physical = {"artifactLocation": {"uri": loc.file},
                    "region": {"startLine": loc.line, "startColumn": loc.col}}
        entry: dict[str, Any] = {"physicalLocation": physical}
        if d.obj is not None or d.path:
            entry["logicalLocations"] = [{"fullyQualifiedName": _logical_name(d),
                                          "kind": "object"}]
        locations.append(entry)
    if locations:
        result["locations"] = locations
    return result


def _full_message(d: Diagnostic) -> str:
    path = f"{d.field_path}: " if d.path else ""
    return f"{path}{d.message}"


def _logical_name(d: Diagnostic) -> str:
    obj = str(d.obj) if d.obj is not None else ""
    return " ".join(part for part in (obj, d.field_path) if part)


def sarif(diagnostics: Sequence[Diagnostic]) -> str:
    """A SARIF 2.1.0 log with one run of `tjc` and its rules."""
    rules = sorted({d.rule for d in diagnostics})
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "tjc", "version": __version__,
                                "rules": [{"id": rule} for rule in rules]}},
            "results": [_sarif_result(d) for d in diagnostics],
        }],
    }
    return json.dumps(log, indent=2, sort_keys=True) + "\n"


RENDERERS: dict[str, Callable[[Sequence[Diagnostic]], str]] = {
    "text": text,
    "json": as_json,
    "sarif": sarif,
}
