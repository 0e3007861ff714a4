"""The loader's native fast path: libyaml events built straight into Python values.
(The same compiled module holds the emitter's, `emitter`; `compiler.io.emit` uses it.)

`yamlext/fastyaml.c`, compiled into the package as `compiler/_native/_fastyaml` (setup.py)
or into a checkout's build/yaml by `make setup`, builds what the loader's plain loader builds
for the YAML most manifests are: mappings with string keys, sequences, quoted and plain
scalars; and, when a diagnostic needs them, the position tables the loader's walk of PyYAML's
nodes makes. Plain scalars go through the loader's own resolver and cache, so kubectl's
rules stay in one place. For anything else (a tag, an anchor or alias, a non-string or
duplicate key, a scalar with no JSON value, a syntax error) it raises `Fallback` and the
loader takes its full path from there (`with_fallback`), which reports errors with their
positions. Without the compiled module (no C compiler or libyaml headers when the package
was built) `stream` and `positions` return None and the full path does everything;
TJC_PURE_YAML=1 makes that the case on purpose.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple, TypeVar

MODULE = "compiler._native._fastyaml"
BUILD_DIR = Path(__file__).resolve().parents[2] / "build" / "yaml"
DISABLE_ENV = "TJC_PURE_YAML"
T = TypeVar("T")


class _NeverRaised(Exception):
    """`Fallback` when there is no compiled module (nothing raises it)."""


def _load() -> ModuleType | None:
    """The compiled module from the installed package, else from the checkout's build
    folder, else None."""
    if os.environ.get(DISABLE_ENV) == "1":
        return None
    try:
        return importlib.import_module(MODULE)
    except ImportError:
        pass
    for path in sorted(BUILD_DIR.glob("_fastyaml*.so")):
        spec = importlib.util.spec_from_file_location(MODULE, path)
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except ImportError:  # built for another platform or Python
            continue
        return module
    return None


_NATIVE = _load()
Fallback: type[Exception] = _NATIVE.Fallback if _NATIVE is not None else _NeverRaised


class Plain(NamedTuple):
    """How plain scalars are resolved: `resolve(text)` gives a text's value (`missing`: it
    has none JSON can carry); `cache` holds its answers; a text that is not one of `words`
    and does not start with one of `starts` is a string without asking."""

    cache: dict[str, Any]
    resolve: Callable[[str], Any]
    missing: object
    words: frozenset[str]
    starts: str


def available() -> bool:
    """Whether the compiled fast path is in use."""
    return _NATIVE is not None


def emitter() -> Callable[..., str] | None:
    """The emitter's compiled fast path (`emit(obj, texts, max_texts, scalar_string,
    scalar, plain)`, see `compiler.io.emit`), or None without the compiled module (or one
    built before it had one)."""
    return getattr(_NATIVE, "emit", None)


def stream(text: str, plain: Plain, deepest: int | None = None,
           lines: list[tuple[int, int]] | None = None) -> Iterator[Any] | None:
    """The documents of `text` as the plain loader builds them, lazily; iterating raises
    `Fallback` where the fast path stops (also at a collection nested more than `deepest`
    levels, when given). Where each document starts (its first line, 0-based, and that
    line's offset in `text`) is appended to `lines`, when given, as it is met. None when
    there is no compiled module."""
    data = _utf8(text)
    if _NATIVE is None or data is None:
        return None
    documents: Iterator[Any] = _NATIVE.stream(
        data, *plain, deepest or 0, lines)  # (0: the module's own bound)
    return documents


def positions(text: str, max_depth: int, max_nodes: int,
              wanted: Callable[[int], bool] | None = None, first_line: int = 0
              ) -> Iterator[dict[Any, Any] | None] | None:
    """Each document's position table (field path -> 1-based (line, column), the lines
    counted from `first_line` on, where the text starts in its file), lazily, as the
    loader's walk of composed nodes makes it (no path deeper than `max_depth`, no more than
    about `max_nodes` paths); with `wanted`, None for a document whose index it does not
    name (its table is not made). Iterating raises `Fallback` where the fast path stops (an
    anchor, an alias, a syntax error). None when there is no compiled module."""
    data = _utf8(text)
    if _NATIVE is None or data is None:
        return None
    tables: Iterator[dict[Any, Any] | None] = _NATIVE.positions(data, max_depth, max_nodes,
                                                                 wanted, first_line)
    return tables


def with_fallback(fast: Iterator[T] | None, full: Callable[[], Iterable[T]]) -> Iterator[T]:
    """`fast`'s items; where it gives up (or when it is None), `full()`'s from the same item
    on (the full path makes the items before it again, and they are passed over)."""
    done = 0
    if fast is not None:
        try:
            for item in fast:
                done += 1
                yield item
            return
        except Fallback:
            pass
    yield from itertools.islice(full(), done, None)


def _utf8(text: str) -> bytes | None:
    """The text as libyaml reads it; None for a lone surrogate (the full path says what is
    wrong with it)."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return None
