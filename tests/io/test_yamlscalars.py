"""The plain-scalar resolver's shortcut for texts no number branch takes is exact.

`yamlscalars._resolve_number` answers "a string" at once for a text with a character no
number is written with, or with a sign inside it (not after an exponent's e); the branches
after it (Go's ParseInt, ParseUint, go-yaml's float pattern and ParseFloat, the 0b form) are
the reference, run here with the shortcut switched off. kubectl's own reading of plain scalars
is checked against the Go oracle in tests/parity.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.io import yamlscalars

STARTS = st.sampled_from(list(yamlscalars.NUMBER_STARTS))
BODY = st.text(alphabet="0123456789abcdefABCDEFxXoObBeE+-._=: gz\n", max_size=8)


def _without_shortcut(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, object]:
    with monkeypatch.context() as patch:
        patch.setattr(yamlscalars, "_NUMBER_CHARS", frozenset(map(chr, range(0x80))) | {"é"})
        patch.setattr(yamlscalars, "_INNER_SIGN", re.compile(r"(?!)"))
        return yamlscalars._resolve_number(text)


@settings(max_examples=2000, deadline=None)
@given(STARTS, BODY)
def test_the_shortcut_answers_what_the_branches_answer(first: str, body: str) -> None:
    text = first + body
    with pytest.MonkeyPatch.context() as patch:
        want = _without_shortcut(text, patch)
    assert repr(yamlscalars._resolve_number(text)) == repr(want)


@pytest.mark.parametrize(("text", "kind"), [
    ("--run=4118", "str"), ("9225-4118", "str"), ("1.2.3-rc1", "str"), ("2001-12-14", "str"),
    ("1e-3", "float"), ("-0b101", "int"), ("0x1F", "int"), ("1_000", "int"), ("+.5", "float"),
    ("-1", "int"), ("18446744073709551615", "uint"),
])
def test_numbers_and_strings_that_start_like_numbers(text: str, kind: str) -> None:
    assert yamlscalars.go_value(text)[0] == kind


@pytest.mark.parametrize("text", ["4\n", "1.5\n", "-2e3\n"])
def test_a_final_line_break_is_no_part_of_a_number(text: str) -> None:
    """go-yaml's float pattern ends with Go's `$` (the end of the text) and ParseFloat
    refuses a line break: a string (Python's `$` matched before a final line break)."""
    assert yamlscalars.go_value(text) == ("str", text)
