"""`tjc validate`'s report written as the diagnostics come, byte for byte what
`compiler.validate.report.RENDERERS` prints for the whole list.

text and github lines go out at once; a JUnit report and PolicyReports are written at the
end (they group the diagnostics by file or namespace, so they hold them); a JSON or SARIF
report's items are spooled to a temporary file and copied between the head and the tail,
which depend on the whole run (the summary, the exit code, the rules). The exit code is
counted on the way. Memory stays flat however many diagnostics there are (but for the
formats that hold them).
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from compiler.cli import console
from compiler.common.diagnostics import Diagnostic, Severity
from compiler.validate.locations import BUILTIN_PREFIX, Context

MARK = "@@tjc-items@@"


def _nested(value: Any, depth: int) -> str:
    indent = "  " * depth
    return indent + json.dumps(value, indent=2, sort_keys=True).replace("\n", "\n" + indent)


def _item(fmt: str, d: Diagnostic, context: Context) -> Any:
    """A diagnostic as a JSON or SARIF report holds it (each format's module is imported only
    when asked for: a text report needs none)."""
    if fmt == "json":
        from compiler.validate import report

        return report.as_dict(d)
    from compiler.validate import sarif

    return sarif.result(d, context)


def _only_builtin(d: Diagnostic) -> bool:
    return bool(d.locations) and all(loc.file.startswith(BUILTIN_PREFIX)
                                     for loc in d.locations)


class Report:
    """One run's report: `add` each diagnostic, then `finish` with the run's context."""

    def __init__(self, fmt: str, out: TextIO, context: Context, *, strict: bool,
                 files: Sequence[str] = (), colour: bool = False,
                 whole: Callable[[list[Diagnostic]], str] | None = None) -> None:
        self.fmt, self.out, self.context, self.strict = fmt, out, context, strict
        self.files, self.colour = files, colour
        self.whole = whole  # the report of all the diagnostics (policyreport's)
        self.held: list[Diagnostic] = []  # JUnit's and policyreport's
        self.counts: Counter[Severity] = Counter()
        self.rules: set[str] = set()
        self.failing = False
        self.spool: TextIO | None = None
        if fmt in ("json", "sarif"):
            import tempfile  # only JSON and SARIF spool

            self.spool = tempfile.TemporaryFile(  # noqa: SIM115 (closed by finish)
                "w+", encoding="utf-8")

    def add(self, d: Diagnostic) -> None:
        """Count one diagnostic and write (or spool) its part of the report."""
        self.counts[d.severity] += 1
        self.rules.add(d.rule)
        self.failing = self.failing or self._fails(d)
        if self.fmt in ("junit", "policyreport"):
            self.held.append(d)
        elif self.fmt == "text":
            self.out.write(console.line(d, self.colour) + "\n")
        elif self.fmt == "github":
            from compiler.validate import github

            self.out.write(github.render([d], self.context))
        else:
            assert self.spool is not None
            item = _item(self.fmt, d, self.context)
            depth = 2 if self.fmt == "json" else 4
            self.spool.write(("" if sum(self.counts.values()) == 1 else ",\n")
                             + _nested(item, depth))

    def _fails(self, d: Diagnostic) -> bool:
        return d.severity is Severity.ERROR or (
            self.strict and d.severity is Severity.WARNING and not _only_builtin(d))

    @property
    def exit_code(self) -> int:
        """1 on errors (with `strict` on warnings not only in built-in runtimes), else 0."""
        return 1 if self.failing else 0

    def finish(self, context: Context) -> None:
        """Write the end of the report (for JSON and SARIF, all of it)."""
        total = sum(self.counts.values())
        if self.fmt == "text" and total:
            self.out.write(f"{self.counts[Severity.ERROR]} errors, "
                           f"{self.counts[Severity.WARNING]} warnings, "
                           f"{self.counts[Severity.NOTICE]} notices\n")
        if self.fmt == "junit":
            from compiler.validate import junit

            self.out.write(junit.render(self.files, self.held, self._fails))
        if self.fmt == "policyreport" and self.whole is not None:
            self.out.write(self.whole(self.held))
        if self.spool is None:
            return
        whole = self._whole(context)
        if not total:
            self.out.write(whole([]))
            return
        head, tail = whole([MARK]).split(_nested(MARK, 2 if self.fmt == "json" else 4))
        self.out.write(head)
        self.spool.seek(0)
        shutil.copyfileobj(self.spool, self.out)
        self.out.write(tail)
        self.spool.close()

    def _whole(self, context: Context) -> Callable[[list[Any]], str]:
        """The report with these items in place of the diagnostics'."""
        if self.fmt == "json":
            summary = {s.value + "s": self.counts[s] for s in Severity}
            return lambda items: json.dumps({"diagnostics": items, "summary": summary},
                                            indent=2, sort_keys=True) + "\n"
        from compiler.validate import sarif

        return lambda items: sarif.log(items, sorted(self.rules), context)
