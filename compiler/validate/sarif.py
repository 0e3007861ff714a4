"""The SARIF 2.1.0 report: one run of `tjc` with its rules (name, short and full description,
help with the README anchor), its invocation and exit code, and one result per diagnostic with
repository-relative locations. An exempted policy violation is a result with the level it would
have had and a `suppressions` entry (external: the policy settings; inSource: the object's
annotation). Pure; called through `report.RENDERERS`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.validate.locations import SRCROOT, Context, RuleInfo, describe
from compiler.version import __version__

LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTICE: "note"}


def _rule(info: RuleInfo) -> dict[str, Any]:
    return {"id": info.id, "name": info.name,
            "shortDescription": {"text": info.short},
            "fullDescription": {"text": info.full},
            "helpUri": info.help_uri,
            "help": {"text": f"{info.full}. See {info.help_uri}.",
                     "markdown": f"{info.full}. See [the README]({info.help_uri})."}}


def _logical_name(d: Diagnostic) -> str:
    obj = str(d.obj) if d.obj is not None else ""
    return " ".join(part for part in (obj, d.field_path) if part)


def result(d: Diagnostic, context: Context) -> dict[str, Any]:
    """One diagnostic as a SARIF result."""
    severity = d.suppression.severity if d.suppression is not None else d.severity
    path = f"{d.field_path}: " if d.path else ""
    out: dict[str, Any] = {"ruleId": d.rule, "level": LEVELS[severity],
                           "message": {"text": f"{path}{d.message}"}}
    locations = []
    for loc in d.locations:
        physical = {"artifactLocation": context.artifact(loc.file),
                    "region": {"startLine": loc.line, "startColumn": loc.col}}
        entry: dict[str, Any] = {"physicalLocation": physical}
        if d.obj is not None or d.path:
            entry["logicalLocations"] = [{"fullyQualifiedName": _logical_name(d),
                                          "kind": "object"}]
        locations.append(entry)
    if locations:
        out["locations"] = locations
    if d.suppression is not None:
        out["suppressions"] = [{"kind": d.suppression.kind, "status": "accepted",
                                   "justification": d.suppression.justification}]
    return out


def render(diagnostics: Sequence[Diagnostic], context: Context | None = None) -> str:
    """A SARIF 2.1.0 log with one run of `tjc`, its rules and its invocation."""
    context = context or Context()
    return log([result(d, context) for d in diagnostics], sorted({d.rule for d in diagnostics}),
               context)


def log(results: list[Any], ids: list[str], context: Context) -> str:
    """The log of a run with these results (of `result`) and rule ids."""
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "tjc", "version": __version__,
                            "rules": [_rule(describe(i, context.policy_rules)) for i in ids]}},
        "invocations": [{"executionSuccessful": context.exit_code in (0, 1),
                         "exitCode": context.exit_code,
                         **({"commandLine": context.command_line}
                            if context.command_line else {})}],
        "results": results,
    }
    if context.root is not None:
        run["originalUriBaseIds"] = {SRCROOT: {"uri": f"file://{context.root.rstrip('/')}/"}}
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
           "runs": [run]}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"
