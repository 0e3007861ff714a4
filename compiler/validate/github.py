"""GitHub Actions workflow commands, one annotation per diagnostic:
`::error file=jobs/a.yaml,line=4,col=9,title=TJC-SCHEMA-TYPE::spec.trainer: ...`.

Files are repository-relative (GitHub resolves them against the workspace); a diagnostic in a
built-in runtime names the upstream file in its message instead. Exempted violations are
notices that say which exemption was used. Pure; called through `report.RENDERERS`.
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.validate.locations import BUILTIN_PREFIX, Context

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTICE: "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _line(d: Diagnostic, context: Context) -> str:
    props: list[str] = []
    obj = f"{d.obj}: " if d.obj is not None else ""
    path = f"{d.field_path}: " if d.path else ""
    message = f"{obj}{path}{d.message}"
    if d.suppression is not None:
        message += f" (exempted by {d.suppression.justification})"
    if d.locations:
        loc = d.locations[0]
        if loc.file.startswith(BUILTIN_PREFIX):
            uri = context.builtin_uris.get(loc.file.removeprefix(BUILTIN_PREFIX), loc.file)
            message = f"{message} (built-in runtime {uri}#L{loc.line})"
        else:
            file = context.repo_path(loc.file) or loc.file
            props += [f"file={_property(file)}", f"line={loc.line}", f"col={loc.col}"]
    props.append(f"title={_property(d.rule)}")
    return f"::{COMMANDS[d.severity]} {','.join(props)}::{_data(message)}"


def render(diagnostics: Sequence[Diagnostic], context: Context | None = None) -> str:
    """One workflow command per diagnostic."""
    context = context or Context()
    return "".join(_line(d, context) + "\n" for d in diagnostics)
