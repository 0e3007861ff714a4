"""The loader's native fast path builds exactly what the plain loader builds, or gives up;
its position tables are those the loader's walk of PyYAML's nodes makes.

The reference is the loader's full path (`yamlread.PlainLoader`, PyYAML's libyaml parser with
kubectl's scalar rules). The fast path must build the same values with the same types and key
order, never accept a text the full path refuses, and give up (`Fallback`) on what it does
not cover, after which the loader's documents and diagnostics equal the full path's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.corpus import stream as corpus_stream
from compiler.common.diagnostics import Diagnostic
from compiler.io import fastload, loader, yamlplain, yamlread
from compiler.io.loadlimits import MAX_NODES
from tests import goldenfile
from tests.fuzz.strategies import FRAGMENTS

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    not fastload.available() and os.environ.get("CI") != "true",
    reason="the native fast path is not built (make setup builds it)")

# Plain scalars whose kubectl values differ from YAML 1.2's or PyYAML's own.
TRICKY = ["0777", "08", "0x1F", "0o17", "0b101", "1_000", "1e9", "1E3", "-1.5e-3", ".5",
          "yes", "No", "on", "OFF", "y", "n", "~", "null", "NULL", "true", "False", "", "-",
          "2001-12-14", "12:30:45", "1:20", "+1", "-0", "9223372036854775808",
          "18446744073709551616", ".inf", "-.Inf", ".nan", "<<", "=", "3.", "0.", "é", "a b"]


def _typed(value: Any) -> Any:
    """`value` with every type spelled out and key order kept (1 != True != 1.0 here)."""
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(item) for item in value])
    return (type(value).__name__, repr(value))


def _full(text: str) -> Any:
    try:
        return _typed(list(yaml.load_all(text, Loader=yamlread.PlainLoader)))
    except yaml.YAMLError:
        return "error"


def _fast(text: str) -> Any:
    documents = fastload.stream(text, yamlplain.FAST_PLAIN)
    assert documents is not None
    try:
        return _typed(list(documents))
    except fastload.Fallback:
        return "fallback"


def _positions(text: str, native: bool) -> Any:
    """The position tables the loader makes of `text`, with or without the fast path."""
    saved = fastload._NATIVE
    fastload._NATIVE = saved if native else None
    try:
        return list(loader._compose_positions(text))
    finally:
        fastload._NATIVE = saved


def _fast_positions(text: str) -> Any:
    tables = fastload.positions(text, loader._POSITION_DEPTH, MAX_NODES)
    assert tables is not None
    try:
        return list(tables)
    except fastload.Fallback:
        return "fallback"


def _agree(text: str) -> Any:
    """The fast result, after checking it against the full path's."""
    fast, full = _fast(text), _full(text)
    if fast != "fallback":
        assert full != "error", f"the fast path accepted what the full path refuses: {text!r}"
        assert fast == full, text
    without = _positions(text, False)
    assert _positions(text, True) == without, text
    tables = _fast_positions(text)
    assert tables == "fallback" or tables == without, text
    return fast


def test_position_tables_on_every_golden_input() -> None:
    texts = [text for path in goldenfile.cases()
             for name, text in goldenfile.parse(path).inputs.items()
             if name.endswith((".yaml", ".yml", ".json"))]
    made = [_fast_positions(text) for text in texts]
    assert sum(tables != "fallback" for tables in made) > 0.8 * len(texts)
    for text, tables in zip(texts, made, strict=True):
        assert tables in ("fallback", _positions(text, False)), text


def test_ci_builds_the_fast_path() -> None:
    assert fastload.available(), "make setup builds build/yaml/_fastyaml.abi3.so"


@pytest.mark.parametrize("scalar", TRICKY)
@pytest.mark.parametrize("quote", ["", "'", '"'])
def test_scalars_as_values_and_keys(scalar: str, quote: str) -> None:
    q = f"{quote}{scalar}{quote}"
    for text in (f"v: {q}\n", f"{q}: v\n", f"- {q}\n- [{q}, {{k: {q}}}]\n"):
        _agree(text)


def test_the_corpus_runtimes_and_examples_take_the_fast_path() -> None:
    texts = ["".join(corpus_stream(50))]
    for folder in ("compiler/runtimes", "examples"):
        texts += [p.read_text() for p in sorted((ROOT / folder).rglob("*.y*ml"))
                  if "templates" not in p.parts]  # Helm's templates are not YAML yet
    assert len(texts) > 20
    assert [_agree(text) != "fallback" for text in texts] == [True] * len(texts)


def test_every_golden_input_and_output_agrees() -> None:
    texts = [text for path in goldenfile.cases() for case in [goldenfile.parse(path)]
             for name, text in (*case.inputs.items(), *case.wants.items())
             if name.endswith((".yaml", ".yml", ".json"))]
    built = [_agree(text) != "fallback" for text in texts]
    assert len(built) > 300 and sum(built) > 0.8 * len(built)


@pytest.mark.parametrize("text", [
    "a: !!str 1\n", "a: &x 1\nb: *x\n", "a: &x {b: 1}\n", "? [a]\n: 1\n", "1: one\n",
    "true: x\n", "a: 1\na: 2\n", "a: .inf\n", "a: [1, 2\n", "a: 'x\n", "- a\nb: c\n",
    "a: 1\n---\nb: [\n", "a:\n  b: 1\n   c: 2\n", "%TAG !e! tag:e.com,2000:\n--- !e!x {a: 1}\n",
    "a: !!binary aGk=\n", "a: !!timestamp 2001-12-14\n", "a:\x07b\n",
    "a: {<<: {x: 1}, y: 2}\n", "<<: [{a: 1}]\n",
])
def test_what_the_fast_path_leaves_to_the_full_path(text: str) -> None:
    assert _agree(text) == "fallback"


def _documents(text: str, native: bool, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    with monkeypatch.context() as patch:
        if not native:
            patch.setattr(fastload, "_NATIVE", None)
        source = loader.Source("in.yaml", text)
        return [repr(d) if isinstance(d, Diagnostic) else
                (d.index, d.base, _typed(d.data)) for d in loader.iter_source(source)]


@pytest.mark.parametrize("text", [
    "kind: A\n---\nkind: B\nx: !!str 1\n---\nkind: C\n",  # gives up in the second document
    "kind: A\n---\nkind: B\nx: [\n---\nkind: C\n",  # a syntax error after a good document
    "kind: A\n---\nkind: B\nx: 1\nx: 2\n",  # a duplicate key in the second
    "kind: A\n---\n- 1\n---\nkind: C\nv: .nan\n",
    "apiVersion: v1\nkind: List\nitems: [{a: 1}, 2]\n",
    "---\n---\nkind: A\n...\n", "", "# only a comment\n",
    # nesting: 100 levels are read, 101 end the stream there (TJC-INPUT-TOO-DEEP), wherever
    # the fast path stops
    f"kind: A\n---\nkind: B\nx: {'[' * 99}1{']' * 99}\n---\nkind: C\n",
    f"kind: A\n---\nkind: B\nx: {'[' * 100}1{']' * 100}\n---\nkind: C\n",
    f"{'[' * 101}{']' * 101}\n---\nkind: C\n",
    f"kind: A\ny: &a 1\n---\nkind: B\nx: {'[' * 100}{']' * 100}\n---\nkind: C\n",
    "kind: A\n---\n" + "".join(f"{' ' * i}k{i}:\n" for i in range(101)) + "---\nkind: C\n",
])
def test_loader_documents_and_diagnostics_equal_the_full_paths(
        text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _documents(text, True, monkeypatch) == _documents(text, False, monkeypatch)


def test_a_stream_nested_deep_enough_stops_at_the_deep_document(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = f"kind: A\n---\nkind: B\nx: {'[' * 100}{']' * 100}\n---\nkind: C\n"
    found = _documents(text, True, monkeypatch)
    assert found[0][0] == 0 and len(found) == 2 and "TJC-INPUT-TOO-DEEP" in found[1]
    assert "Location(file='in.yaml', line=4, col=103)" in found[1]  # the 101st level's start


def test_no_depth_scan_where_the_fast_path_reads_the_whole_stream(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The depth scan (a second parse of the whole text) runs only where the full path must
    compose: a long stream with flow collections is parsed once."""
    text = "".join(f"---\nkind: K{i}\nargs: [a, {{b: [c]}}]\nempty: {{}}\n" for i in range(200))

    def scanned(_: str) -> None:
        raise AssertionError("the depth scan ran")

    monkeypatch.setattr(loader, "too_deep", scanned)
    documents = list(loader.iter_source(loader.Source("in.yaml", text)))
    assert [d.data["kind"] for d in documents if not isinstance(d, Diagnostic)] == \
        [f"K{i}" for i in range(200)]


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("middle", ["kind: B\nx: [1, {y: 2}]\n", "kind: B\nx: &a 1\n",
                                    "kind: B\nx: [1\n"])
def test_a_stream_locates_the_documents_asked_for_in_any_order(middle: str, native: bool,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """Only the tables asked for are made; the others' events are read (an anchor there hands
    the walk to the full path, a syntax error ends it) and every table is the full path's."""
    docs = [f"kind: A{i}\nspec:\n  n: {i}\n  list:\n  - a: {i}\n" for i in range(8)]
    text = "---\n".join([*docs[:4], middle, *docs[4:]])
    if not native:
        monkeypatch.setattr(fastload, "_NATIVE", None)
    want = loader._compose_positions(text)
    full = [next(want, {}) for _ in range(9)] if "[1\n" not in middle else []
    source = loader.Source("in.yaml", text)
    kind_lines = [n for n, line in enumerate(text.split("\n"), 1) if line.startswith("kind:")]
    for index in (6, 2, 2, 8, 0, 5, 7, 1):
        table = source.positions(index)
        expected = full[index] if full else \
            ({} if index >= 4 else _positions(text, False)[index])
        assert table == expected, (index, table)
        if full:  # the document's own `kind:` line, counted in the text
            assert table[("kind",)] == (kind_lines[index], 7)


def test_the_compiled_walk_makes_only_the_tables_named() -> None:
    text = "".join(f"---\nkind: K{i}\na: {{b: [1]}}\n" for i in range(5))
    tables = fastload.positions(text, loader._POSITION_DEPTH, MAX_NODES, lambda i: i in (1, 3))
    assert tables is not None
    made = list(tables)
    assert [t is None for t in made] == [True, False, True, False, True]
    assert made[3] == _positions(text, False)[3]


def _walked_and_sliced(text: str) -> tuple[list[Any], list[Any]]:
    """Every document's table from a walk of the whole text, and from the document's own
    lines once the loader has read the stream (and recorded where each document starts).
    Each document the loader yields is located from its own lines as it comes too (before
    the next one is read), as render and validate locate them: the same table."""
    walked = loader.Source("in.yaml", text)
    sliced = loader.Source("in.yaml", text)
    early = {doc.index: sliced.positions(doc.index) for doc in loader.iter_source(sliced)
             if isinstance(doc, loader.Document)}
    indices = list(range(max(len(sliced.lines or []), max(early, default=-1) + 1, 1)))
    whole = [walked.positions(i) for i in indices]
    assert early == {i: whole[i] for i in early}, text
    return (whole, [sliced.positions(i) for i in reversed(indices)][::-1])


@pytest.mark.parametrize("text", [
    "# a comment\n\n---\nkind: A\nx: 1\n---\n---\nkind: B\ny: [1, {z: 2}]\n",
    "kind: A\r\nx:\r\n  y: 1\r\n---\r\nkind: B\r\n",
    "kind: A\nblock: |\n  line\n\n  more\n--- # c\nkind: B\nx: &a 1\ny: *a\n",
    "a: 1\n",
    "---\n{a: 1}\n---\n- [1, 2]\n",
    "\n\n  a: 1\n  b:\n  - c\n---\n\n# only\n---\nd: 2\n",
    "ä: ü\n---\nkind: A\n  # ü\n---\n  {é: [1, 2]}\n---\nkind: \"ééé\"\nx: 1\n",
])
def test_a_documents_table_from_its_own_lines_is_the_walks(text: str) -> None:
    walked, sliced = _walked_and_sliced(text)
    assert sliced == walked
    assert any(walked)


def test_golden_inputs_and_a_corpus_stream_locate_alike_from_their_own_lines() -> None:
    texts = ["".join(corpus_stream(30))] + [
        text for path in goldenfile.cases() for name, text in goldenfile.parse(path).inputs.items()
        if name.endswith((".yaml", ".yml"))]
    located, streams = 0, 0
    for text in texts:
        walked, sliced = _walked_and_sliced(text)
        assert sliced == walked, text
        located += any(walked)
        streams += len(walked) > 1
    assert located > 100 and streams >= 5, (located, streams)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.data(), min_size=1, max_size=4))
def test_generated_streams_locate_alike_from_their_own_lines(parts: list[Any]) -> None:
    text = "---\n".join("\n".join(_lines(part.draw)) + "\n" for part in parts)
    if not loader.Source("in.yaml", text).in_parts():
        walked, sliced = _walked_and_sliced(text)
        assert sliced == walked, text


def _lines(draw: Any) -> Iterator[str]:
    for _ in range(draw(st.integers(1, 8))):
        indent = " " * draw(st.sampled_from([0, 0, 2, 4, 1]))
        key = draw(st.sampled_from(["a", "b", "kind", "'q'", '"d"', "1", "x y", "<<", "-"]))
        value = draw(st.sampled_from(TRICKY) | st.text("ab01.-_:e '\"[]{},#&*!|>é", max_size=6))
        yield draw(st.sampled_from([f"{indent}{key}: {value}", f"{indent}- {value}",
                                    f"{indent}{key}:", "---", f"{indent}[{value}, {key}]"]))


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_generated_texts_agree_with_the_full_path(data: st.DataObject) -> None:
    _agree("\n".join(_lines(data.draw)) + "\n")


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.sampled_from(TRICKY), max_size=40))
def test_token_soup_agrees_with_the_full_path(fragments: list[str]) -> None:
    _agree("".join(fragments))
