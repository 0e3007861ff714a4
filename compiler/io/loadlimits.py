"""Bounds on what one YAML input may cost, checked by the loader before and after building.

Nesting: libyaml's composer recurses in C and crashes the process on ~25k nested collections,
so a document nested more than MAX_DEPTH levels is found from the parser's events (no
recursion) before it is composed; the scan runs only when a cheap count says the text could
be that deep. Size: aliases let a small file stand for a huge document, so after building, a
document whose aliases expand to more than MAX_NODES values, or more than `expanded_limit`
characters of keys and strings, or deeper than MAX_DEPTH, is refused. Pure; called by
`compiler.io.loader` only.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from compiler.common.diagnostics import Diagnostic, error

if TYPE_CHECKING:
    import yaml
else:
    from compiler.io.lazyyaml import yaml

MAX_DEPTH = 100
MAX_NODES = 1_000_000


def _could_be_deep(text: str) -> bool:
    """False only when no document can nest more than MAX_DEPTH levels: a block collection
    starts to the right of its parent's (a sequence under a key at most one level at the same
    column), so block depth is at most 2 * (indentation and `- `/`? `/`: ` prefix) + 2, and
    each flow level needs its own `[` or `{`."""
    flow = text.count("[") + text.count("{")
    prefix = (MAX_DEPTH - 2 - flow) // 2
    return prefix <= 0 or re.search(rf"^[ \t?:-]{{{prefix}}}", text, re.MULTILINE) is not None


def too_deep(text: str) -> tuple[int, int, int] | None:
    """(document index, line, column) of the first collection nested deeper than MAX_DEPTH,
    or None; a syntax error ends the scan (the loader reports it). libyaml's own bound on
    nesting (in the builds PyYAML 6.0.4 on ships) is met by its scanner, which reads ahead of
    the events (a flow collection may be a key): where it stops a document, that document is
    the one too deep (at where the scanner stopped)."""
    if not _could_be_deep(text):
        return None
    depth, index, within = 0, -1, False
    opening = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
    closing = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            if isinstance(event, (yaml.DocumentStartEvent, yaml.DocumentEndEvent)):
                within = isinstance(event, yaml.DocumentStartEvent)
                index += within
            elif isinstance(event, opening):
                depth += 1
                if depth > MAX_DEPTH:
                    return (index, *_place(event.start_mark))
            elif isinstance(event, closing):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        if exc.problem == _LIBYAML_NESTING:
            return (index if within else index + 1, *_place(exc.problem_mark))
    except yaml.YAMLError:
        pass
    return None


_LIBYAML_NESTING = "exceeded maximum nesting depth"


def _place(mark: Any) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark else (1, 1)


def too_deep_error(index: int) -> Diagnostic:
    """The diagnostic for a document nested too deeply (the caller locates it)."""
    return error("TJC-INPUT-TOO-DEEP", f"document {index + 1} is nested more than {MAX_DEPTH} "
                 "levels deep")


def expanded_limit(text_size: int) -> int:
    """Characters a document's aliases may expand it to: ten times the file, at least 1 MiB."""
    return max(10 * text_size, 1 << 20)


def expansion_problem(data: Any, limit: int) -> Diagnostic | None:
    """A document whose aliases expand beyond the bounds (or refer to themselves)."""
    sizes: dict[int, tuple[int, int, int]] = {}

    def measure(value: Any, depth: int) -> tuple[int, int, int]:
        """(values, characters, depth below) of a value as if its aliases were copied."""
        if depth > MAX_DEPTH:
            raise _Exceeded(too_deep_error(0).message.replace("document 1", "the document"))
        if isinstance(value, str):
            return 1, len(value), 0
        if not isinstance(value, (dict, list)):
            return 1, 8, 0
        known = sizes.get(id(value))
        if known is not None:
            if known[0] < 0:
                raise _Exceeded("a YAML alias refers to itself")
            if depth + known[2] > MAX_DEPTH:
                raise _Exceeded(f"YAML aliases nest the document more than {MAX_DEPTH} levels")
            return known
        sizes[id(value)] = (-1, 0, 0)
        nodes, chars, below = 1, 0, 0
        pairs = value.items() if isinstance(value, dict) else ((None, v) for v in value)
        for key, item in pairs:
            n, c, d = measure(item, depth + 1)
            nodes, chars, below = nodes + n, chars + c + (len(key) if key else 0), max(below, d + 1)
        sizes[id(value)] = (nodes, chars, below)
        if nodes > MAX_NODES:
            raise _Exceeded(f"YAML aliases expand to more than {MAX_NODES} values")
        if chars > limit:
            raise _Exceeded(f"YAML aliases expand to more than {limit} characters")
        return nodes, chars, below

    try:
        measure(data, 0)
    except _Exceeded as exc:
        return error("TJC-INPUT-ALIAS", str(exc))
    return None


class _Exceeded(Exception):
    """A bound was passed; the message says which."""
