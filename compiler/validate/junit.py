"""`tjc validate -o junit`: the report as JUnit XML, the test-report format CI systems read
(GitLab, Jenkins, Azure Pipelines, CircleCI).

One test case per input file (and one per built-in runtime or other place a diagnostic names);
a case fails with one `<failure>` per diagnostic that fails the run (errors, and warnings under
`--strict`); the others are listed in the case's `<system-out>`. No timestamps or durations:
the same inputs give the same bytes. Called by `compiler.cli.report_out`; pure.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable

from compiler.common.diagnostics import Diagnostic, one_line

SUITE = "tjc validate"
GENERAL = "tjc"  # the case of diagnostics that name no file (a policy pack that does not load)


def render(files: Iterable[str], diagnostics: list[Diagnostic],
           failing: Callable[[Diagnostic], bool]) -> str:
    """The JUnit XML document for these input files and the run's diagnostics."""
    cases: dict[str, list[Diagnostic]] = {name: [] for name in files}
    for d in diagnostics:
        cases.setdefault(d.locations[0].file if d.locations else GENERAL, []).append(d)
    failed_cases = sum(any(failing(d) for d in found) for found in cases.values())
    top = ET.Element("testsuites", name=SUITE, tests=str(len(cases)),
                     failures=str(failed_cases), errors="0")
    suite = ET.SubElement(top, "testsuite", name=SUITE, tests=str(len(cases)),
                          failures=str(failed_cases), errors="0", skipped="0")
    for name, found in cases.items():
        _case(suite, name, found, failing)
    ET.indent(top)
    body = ET.tostring(top, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


def _case(suite: ET.Element, name: str, found: list[Diagnostic],
          failing: Callable[[Diagnostic], bool]) -> None:
    case = ET.SubElement(suite, "testcase", classname=SUITE, name=name)
    for d in found:
        if failing(d):
            failure = ET.SubElement(case, "failure", type=d.rule, message=_message(d))
            failure.text = d.text()
    others = [d.text() for d in found if not failing(d)]
    if others:
        ET.SubElement(case, "system-out").text = "\n".join(others)


def _message(d: Diagnostic) -> str:
    path = f"{d.field_path}: " if d.path else ""
    return one_line(f"{d.severity.value}: {path}{d.message}")
