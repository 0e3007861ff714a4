"""A document nested too deeply is TJC-INPUT-TOO-DEEP with every PyYAML: the libyaml that
PyYAML 6.0.4 on ships bounds nesting itself (1,000 levels), in its scanner, which reads ahead
of the events, so the depth scan meets that error before it sees level 101. (With that PyYAML,
`yaml.parse("a: " + "[" * 1500)` yields the events up to the key and then raises a
ScannerError "exceeded maximum nesting depth", while increasing flow level, at the 1,000th
`[`; a flow collection at a document's start stops it before its DocumentStartEvent.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from compiler.common.diagnostics import Diagnostic
from compiler.io import fastload, lazyyaml, loader
from compiler.io.loadlimits import too_deep

DEEP = "[" * 3000 + "]" * 3000


def _bounded(monkeypatch: pytest.MonkeyPatch, stop: int) -> None:
    """yaml.parse as that libyaml runs it: the events before `stop`, then its error there."""
    real = yaml.parse

    def parse(stream: str, Loader: Any) -> Iterator[yaml.Event]:
        for event in real(stream, Loader=Loader):
            if event.start_mark is not None and event.start_mark.index >= stop:
                line = stream.count("\n", 0, stop)
                mark: Any = yaml.Mark("<unicode string>", stop + 999, line,
                                      stop - stream.rfind("\n", 0, stop) + 998, None, 0)
                raise yaml.scanner.ScannerError("while increasing flow level", mark,
                                                "exceeded maximum nesting depth", mark)
            yield event
    monkeypatch.setattr(lazyyaml.yaml, "parse", parse)  # (the stand-in keeps what it read)


@pytest.mark.parametrize(("text", "index"), [
    (f"kind: A\n---\nkind: B\nx: {DEEP}\n---\nkind: C\n", 1),  # inside a started document
    (f"{DEEP}\n", 0),  # before the first document's start event
])
def test_libyamls_own_bound_is_the_document_too_deep(text: str, index: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _bounded(monkeypatch, text.index("["))
    found = too_deep(text)
    assert found is not None and found[0] == index
    assert found[1] == text.count("\n", 0, text.index("[")) + 1


def test_the_loader_reports_it_as_too_deep_and_reads_no_further(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = f"kind: A\n---\nkind: B\nx: {DEEP}\n---\nkind: C\n"
    monkeypatch.setattr(fastload, "_NATIVE", None)
    _bounded(monkeypatch, text.index("["))
    read = list(loader.iter_source(loader.Source("in.yaml", text)))
    assert [d.data["kind"] for d in read if not isinstance(d, Diagnostic)] == ["A"]
    problems = [d for d in read if isinstance(d, Diagnostic)]
    assert [(d.rule, d.message) for d in problems] == [
        ("TJC-INPUT-TOO-DEEP", "document 2 is nested more than 100 levels deep")]
    assert [where.line for where in problems[0].locations] == [4]


def test_any_other_error_still_ends_the_scan_quietly() -> None:
    assert too_deep("a: }\nb: " + DEEP + "\n") is None
