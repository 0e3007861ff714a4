"""A manifest stream cut into documents as kubectl cuts it, before any YAML is parsed.

kubectl (k8s.io/apimachinery's YAMLReader, under `kubectl apply -f`, Helm and the resource
builder) splits a file at every line that starts with `---`, then hands each part to
sigs.k8s.io/yaml, which reads the part's first YAML document only. So: a line starting with
`---` followed by anything but blanks and a comment is an error (`--- a: 1`, `---x`); a part's
first line may be a `---` line (kubectl keeps it when nothing came before it in the part); a
directive (`%YAML`, `%TAG`) is never followed by its `---` within a part, so it has no
document; whatever follows a `...` document end in a part is never read; and each line, the
last one too, ends with a line break. libyaml's stream of documents is the same as kubectl's
when none of these arise (`ordinary`), which is nearly every file: the loader then parses the
text as one stream, fast, and otherwise reads `parts` one at a time.

Pure; called by `compiler.io.loader`, and by `compiler.io.inputs` for how far the first
pass reads a stream (`through_last`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

# A line that starts with a directive, a document end, or a `---` with more than a comment:
# where libyaml's stream stops being kubectl's (a bare `---` line parts documents in both).
_ODD_LINE = re.compile(r"\n(?:%|\.\.\.|---(?![ \t]*(?:\r?\n|\Z)|[ \t]+#))")
_BARE_SEPARATOR = re.compile(r"---(?:[ \t]*(?:\r?\n|\Z)|[ \t]+#)")
_HEADS = ("%", "...", "---")
# Go's unicode.IsSpace: what strings.TrimSpace trims after a `---`.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007" \
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


class Part(NamedTuple):
    """One part of a stream as kubectl cuts it: its text (lines as in the file, each ending
    with a line break) and where it starts in the file (0-based line, character offset)."""

    text: str
    line: int
    offset: int


class BadSeparator(NamedTuple):
    """A line starting with `---` that holds more than a comment: kubectl's error. `column`
    (1-based) is where the rest starts."""

    line: int
    column: int
    rest: str


def ordinary(text: str) -> bool:
    """Whether libyaml's documents of `text` are kubectl's: no directive, no `...` line, no
    `---` line with more than a comment, no line break kubectl does not cut at (a lone \\r,
    NEL, LS, PS). Cheap: one scan of the text, and a few for the rare characters."""
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        return False
    if not text.isascii() and ("\x85" in text or "\u2028" in text or "\u2029" in text):
        return False
    if text.startswith(_HEADS) and not _BARE_SEPARATOR.match(text):
        return False
    return _ODD_LINE.search(text) is None


def parts(text: str) -> Iterator[Part | BadSeparator]:
    """The parts kubectl cuts `text` into, in order; a bad `---` line ends them."""
    start = start_line = 0
    line_no, counted = 0, 0
    pos = 0 if text.startswith("---") else text.find("\n---")
    while pos >= 0:
        if text[pos] == "\n":
            pos += 1
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end + 1
        line_no, counted = line_no + text.count("\n", counted, pos), pos
        rest = text[pos + 3:end].lstrip(_GO_SPACE)
        if rest and not rest.startswith("#"):
            yield BadSeparator(line_no, end - len(rest) - pos + 1, rest.rstrip(_GO_SPACE))
            return
        if pos > start:  # the separator ends the part; else it is the part's first line
            yield Part(ended(text[start:pos]), start_line, start)
            start, start_line = end, line_no + 1
        pos = text.find("\n---", end - 1) if end < len(text) else -1
    if len(text) > start:
        yield Part(ended(text[start:]), start_line, start)


def through_last(text: str, wanted: Callable[[str], bool]) -> int:
    """The end of the last part of an `ordinary` text that `wanted` takes, 0 when it takes
    none: `text[:end]` holds the same first parts, and no part after them is wanted. The
    parts are tried from the last one back."""
    end = len(text)
    while end > 0:
        pos = text.rfind("\n---", 0, end)
        if pos < 0 and not text.startswith("---"):
            start = 0
        else:
            line_end = text.find("\n", pos + 1)
            start = len(text) if line_end < 0 else line_end + 1
        if start < end and wanted(text[start:end]):
            return end
        if pos < 0:
            return 0
        end = pos + 1
    return 0


def ended(text: str) -> str:
    """The text with a line break at its end, as kubectl's line reader adds one to the last
    line (a block scalar there keeps it: `a: |` then `  x` is "x\\n" to kubectl)."""
    return text if text.endswith("\n") else text + "\n"


def leading_directives(text: str) -> list[tuple[int, str]]:
    """The directives before a text's first content (0-based line, the line), after blank
    and comment lines: those of its first document."""
    found: list[tuple[int, str]] = []
    pos, number = 0, 0
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line = text[pos:end].rstrip("\r")
        if line.startswith("%"):
            found.append((number, line))
        elif line.strip(" \t") and not line.lstrip(" \t").startswith("#"):
            break
        pos, number = end + 1, number + 1
    return found


_HIDDEN_START = re.compile("[\r\x85\u2028\u2029]---")


def orphan(text: str) -> bool:
    """Whether a part that starts with a directive can hold no document after it: kubectl cut
    its `---` away (only a line break kubectl does not cut at could put one in the part)."""
    return not text.startswith("---") and _HIDDEN_START.search(text) is None
