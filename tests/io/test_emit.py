"""The emitter's compiled fast path writes exactly what the Python emitter writes, and both
write YAML that reads back (as kubectl reads it) to the objects emitted.

The definition is `emit.python_yaml`; `emit.to_yaml` goes through the compiled module's
`emit` (yamlext/fastemit.c) when it is built. Golden files pin the text of real JobSets; these
properties cover the shapes and scalars no golden case has (empty collections at every level,
lists of lists, keys and strings that YAML would read as something else, big integers).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.io import emit, fastload, yamlread

pytestmark = pytest.mark.skipif(
    not fastload.available() and os.environ.get("CI") != "true",
    reason="the native fast path is not built (make setup builds it)")

# strings YAML (YAML 1.1 for kubectl, 1.2, PyYAML) may read as something other than a string
TRICKY = ["", "y", "N", "yes", "off", "~", "null", "true", "0777", "0x1F", "1e3", "1_000",
          ".inf", "-.Inf", ".nan", "12:30", "2001-12-14", "-", "- a", "a: b", "#x", "x #y",
          "'q'", '"d"', "é", "\u2028", "\x85", "\ud800", "\ufeff", "a\nb", " lead", "trail ",
          "{}", "[]", "*a", "&a", "!t", "%p", "@x", "`x", "<<", "=", "?", ":", "-1", "+1"]
# texts near what the compiled emitter writes plain by its table (and just past it)
PLAIN_LIKE = st.text(alphabet=emit._PLAIN_CHARS + " é:#'\"\n", min_size=1, max_size=10)
KEYS = st.one_of(st.sampled_from(TRICKY), st.text(max_size=12), PLAIN_LIKE)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=2**63, max_value=2**200),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(TRICKY),
    st.text(max_size=20), PLAIN_LIKE)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=30)
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=6)
# what the loader can give and a JobSet can hold: no lone surrogate (the loader refuses one),
# integers within int64 (beyond, kubectl's reader gives a float, as for the inputs)
_TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=20)
_KEPT = [t for t in TRICKY if t != "\ud800"]
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**63, max_value=2**63 - 1),
              st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(_KEPT), _TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.one_of(st.sampled_from(_KEPT), _TEXT), inner,
                                            max_size=4)),
    max_leaves=30)
JSON_OBJECTS = st.dictionaries(st.one_of(st.sampled_from(_KEPT), _TEXT), JSON_VALUES,
                               max_size=6)


def _native(obj: dict[Any, Any]) -> str:
    native = fastload.emitter()
    assert native is not None, "the compiled module has no emitter"
    text: str = native(obj, {}, 64, emit.scalar_string, emit._scalar, emit._PLAIN_TABLE)
    return text


@settings(max_examples=400, deadline=None)
@given(OBJECTS)
def test_the_compiled_emitter_writes_what_the_python_emitter_writes(obj: dict[str, Any]) -> None:
    assert _native(obj) == emit.python_yaml(obj)
    assert emit.to_yaml(obj) == emit.python_yaml(obj)


@settings(max_examples=300, deadline=None)
@given(JSON_OBJECTS)
def test_what_is_emitted_reads_back_as_the_same_object(obj: dict[str, Any]) -> None:
    assert _numbers(yaml.load(emit.to_yaml(obj), Loader=yamlread.PlainLoader)) == _numbers(obj)


def _numbers(value: Any) -> Any:
    """`value` with every number as a float (JSON has one number type: a whole float reads
    back as an integer, as kubectl reads it)."""
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ("number", float(value))
    return value


def test_a_list_of_lists_and_empty_collections_at_every_level() -> None:
    obj = {"a": [[1, [2, []]], {}, [], {"b": {}}], "c": {"d": [{}], "e": [[]]}, "f": []}
    assert emit.to_yaml(obj) == (
        "a:\n-\n  - 1\n  -\n    - 2\n    - []\n- {}\n- []\n- b: {}\n"
        "c:\n  d:\n  - {}\n  e:\n  - []\nf: []\n")
    assert _native(obj) == emit.python_yaml(obj)
    assert yaml.load(emit.to_yaml(obj), Loader=yamlread.PlainLoader) == obj


def test_keys_of_other_types_and_scalars_of_other_types() -> None:
    numbered: dict[Any, Any] = {2: "two", 1: {3: "three"}}
    assert _native(numbered) == emit.python_yaml(numbered) == '"1":\n  "3": three\n"2": two\n'
    obj = {"t": (1, "x"), "big": 2**70, "f": 1e21, "g": 0.5, "i": True}
    assert _native(obj) == emit.python_yaml(obj)
    mixed: dict[Any, Any] = {1: "a", "b": "c"}
    with pytest.raises(TypeError):  # sorted() of mixed keys refuses, in both
        emit.python_yaml(mixed)
    with pytest.raises(TypeError):
        _native(mixed)


def test_a_lone_surrogate_outside_a_string_is_written_as_python_writes_it() -> None:
    obj = {"a": ("\ud800",)}  # no JSON value has it; the fallback writes it as Python does
    assert emit.to_yaml(obj) == emit.python_yaml(obj)


def test_the_string_cache_stays_within_its_bound() -> None:
    texts: dict[str, str] = {}
    native = fastload.emitter()
    assert native is not None
    native({f"-k{i}": f"-v{i}" for i in range(500)}, texts, 100, emit.scalar_string,
           emit._scalar, emit._PLAIN_TABLE)  # (texts the table does not call plain)
    assert len(texts) == 100
    emit.to_yaml({f"-image-{i}": f"registry/x:{i}" for i in range(emit._MAX_TEXTS + 10)})
    assert len(emit._TEXTS) == emit._MAX_TEXTS


def test_render_uses_the_compiled_emitter_when_it_is_built() -> None:
    assert emit._NATIVE is not None


@pytest.mark.parametrize("text", ["abc\n", "a\n", "x.y\n", "1\n", "a\nb", "\n", "a:\n"])
def test_a_string_with_a_line_break_at_its_end_keeps_it(text: str) -> None:
    """A plain-looking text with a line break at its end (a `|` block scalar's value) was
    written plain, and read back without it (`$` matches before a final line break)."""
    obj = {"env": [{"name": "A", "value": text}], "z": "after"}
    assert yaml.load(emit.to_yaml(obj), Loader=yamlread.PlainLoader) == obj
    assert yaml.load(emit.python_yaml(obj), Loader=yamlread.PlainLoader) == obj


def test_render_keeps_the_line_break_of_a_block_scalar_env_value() -> None:
    from compiler.io.builtin import builtin_runtimes
    from compiler.io.loader import Source
    from compiler.pipeline.session import JobResult
    from compiler.render.pipeline import render_stream

    trainjob = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n"
                "  name: nl\n  namespace: ml\nspec:\n  runtimeRef:\n    name: torch-distributed\n"
                "  trainer:\n    env:\n    - name: GREETING\n      value: |\n        hello\n")
    results = [r for r in render_stream([Source("tj.yaml", trainjob)], builtin_runtimes())
               if isinstance(r, JobResult)]
    assert results and results[0].objects
    text = emit.yaml_stream(results[0].objects)
    jobset = next(d for d in yaml.load_all(text, Loader=yamlread.PlainLoader)
                  if d["kind"] == "JobSet")
    envs = [e for rjob in jobset["spec"]["replicatedJobs"]
            for c in rjob["template"]["spec"]["template"]["spec"]["containers"]
            for e in c.get("env", []) if e["name"] == "GREETING"]
    assert envs == [{"name": "GREETING", "value": "hello\n"}]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="abcnotyYNFT~.0123456789_/:=@%+()-!&*<", min_size=1, max_size=8))
def test_a_string_plain_for_pyyaml_is_what_its_resolver_says(text: str) -> None:
    """The emitter asks PyYAML's resolver only about texts starting with a character one of
    its implicit types starts with (it has no catch-all resolver): the same answer."""
    assert None not in emit._RESOLVER.yaml_implicit_resolvers
    tag = emit._RESOLVER.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    if text[:1] not in emit._IMPLICIT_STARTS:
        assert tag == "tag:yaml.org,2002:str"


def test_the_plain_table_states_the_plain_pattern() -> None:
    """Its characters are those _PLAIN takes after the first one; its first ones, letters
    _PLAIN takes first."""
    follows = {chr(c) for c in range(128) if emit._PLAIN.fullmatch("a" + chr(c))}
    assert follows == set(emit._PLAIN_CHARS)
    starts = {chr(c) for c in range(128) if emit._PLAIN_TABLE[c] == 2}
    assert starts == emit._PLAIN_STARTS and all(c.isalpha() for c in starts)
    assert all(emit._PLAIN.fullmatch(c) for c in starts)
    assert {chr(c) for c in range(128) if emit._PLAIN_TABLE[c]} == follows


@settings(max_examples=1000, deadline=None)
@given(PLAIN_LIKE)
def test_what_the_table_calls_plain_the_rules_write_plain(text: str) -> None:
    if text[0] in emit._PLAIN_STARTS and set(text) <= set(emit._PLAIN_CHARS) \
            and not text.endswith(":"):
        assert emit.scalar_string.__wrapped__(text) == text
    assert _native({"k": text}) == emit.python_yaml({"k": text})
