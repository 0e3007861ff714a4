"""Renderers for diagnostics: `text` (one line each), `json`, `sarif` (SARIF 2.1.0, `sarif`)
and `github` (GitHub Actions annotations, `github`), behind one small registry. Pure:
diagnostics and the run's `Context` in, text out; called by the CLI.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.validate import github, sarif
from compiler.validate.locations import Context


def text(diagnostics: Sequence[Diagnostic]) -> str:
    """One line per diagnostic, then a summary line when there is anything to say."""
    lines = [d.text() for d in diagnostics]
    counts = Counter(d.severity for d in diagnostics)
    if lines:
        lines.append(f"{counts[Severity.ERROR]} errors, {counts[Severity.WARNING]} warnings, "
                     f"{counts[Severity.NOTICE]} notices")
    return "".join(line + "\n" for line in lines)


def as_dict(d: Diagnostic) -> dict[str, Any]:
    out: dict[str, Any] = {"severity": d.severity.value, "rule": d.rule, "message": d.message,
                           "path": d.field_path}
    if d.obj is not None:
        out["object"] = {"kind": d.obj.kind, "namespace": d.obj.namespace, "name": d.obj.name}
    out["locations"] = [{"file": loc.file, "line": loc.line, "column": loc.col}
                        for loc in d.locations]
    if d.suppression is not None:
        out["suppression"] = {"kind": d.suppression.kind,
                              "justification": d.suppression.justification,
                              "severity": d.suppression.severity.value}
    return out


def as_json(diagnostics: Sequence[Diagnostic], context: Context | None = None) -> str:
    """`{"diagnostics": [...], "summary": {...}}`, keys sorted; an exempted violation has a
    `suppression` (kind, justification, the severity it would have had)."""
    counts = Counter(d.severity.value for d in diagnostics)
    doc = {"diagnostics": [as_dict(d) for d in diagnostics],
           "summary": {s.value + "s": counts[s.value] for s in Severity}}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def text_report(diagnostics: Sequence[Diagnostic], context: Context | None = None) -> str:
    """`text` with the renderer signature."""
    return text(diagnostics)


RENDERERS: dict[str, Callable[[Sequence[Diagnostic], Context | None], str]] = {
    "text": text_report,
    "json": as_json,
    "sarif": sarif.render,
    "github": github.render,
}
