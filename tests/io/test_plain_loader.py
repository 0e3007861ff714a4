"""The direct loader for text without aliases builds what PyYAML's constructor builds."""

from __future__ import annotations

import pytest
import yaml

from bench.corpus import stream
from compiler.io import yamlread

TEXTS = [
    "a: 1\nb: 1.5\nc: true\nd: null\ne: ~\nf: 2024-01-01\ng: !!binary aGk=\nh: '1'\ni: 0x1F\n",
    "list: [1, two, {three: 3}, [4]]\nnested: {a: {b: {c: [yes, no, on, off]}}}\n",
    "<<: {a: 1, b: 2}\nc: 3\n",
    "1: one\ntrue: two\n1.5: three\nnull: four\n",
    "1: one\ntrue: two\n1.5: three\n.inf: x\ny: yes\n08: 1e9\n",
    "---\nkind: A\n---\n---\n[1, 2]\n---\nplain text\n",
    "x: |\n  block\n  text\ny: >-\n  folded\n  text\nz: \"\\u00e9\"\n",
    "".join(stream(20)),
]


def _load(text: str, loader_class: type) -> object:
    try:
        return list(yaml.load_all(text, Loader=loader_class))
    except yaml.YAMLError as exc:
        return f"error: {exc}"


@pytest.mark.parametrize("text", TEXTS)
def test_same_data_as_the_generic_constructor(text: str) -> None:
    want, got = _load(text, yamlread.Loader), _load(text, yamlread.PlainLoader)
    assert got == want
    assert repr(got) == repr(want)  # the same types too (1 and True, '1' and 1)


def test_duplicate_keys_are_refused_at_the_key() -> None:
    with pytest.raises(yaml.MarkedYAMLError) as info:
        list(yaml.load_all("a: 1\nb:\n  c: 1\n  c: 2\n", Loader=yamlread.PlainLoader))
    mark = info.value.problem_mark
    assert "duplicate key 'c'" in str(info.value) and mark is not None and mark.line == 3


@pytest.mark.parametrize(("text", "value"), [
    ("a: !!map x\n", {"a": "x"}), ("!!seq abc\n", "abc"), ("a: !!str {b: 1}\n", {"a": {"b": 1}}),
    ("a: !!seq x\n", {"a": "x"}), ("a: [!!map {}, !!str [1]]\n", {"a": [{}, [1]]}),
    ("a: !!set {b, c}\n", {"a": {"b": None, "c": None}}), ("a: !!omap [{b: 1}]\n",
                                                            {"a": [{"b": 1}]})])
def test_a_standard_tag_on_the_wrong_kind_of_node_is_read_as_kubectl_reads_it(
        text: str, value: object) -> None:
    """go-yaml v2 (sigs.k8s.io/yaml) passes over a tag on a collection and reads a scalar
    under a collection tag as its text (test_parity checks these against the oracle)."""
    for loader_class in (yamlread.Loader, yamlread.PlainLoader):
        assert list(yaml.load_all(text, Loader=loader_class)) == [value]


def test_a_collection_key_is_a_marked_error_whatever_its_tag() -> None:
    for loader_class in (yamlread.Loader, yamlread.PlainLoader):
        with pytest.raises(yaml.MarkedYAMLError) as info:
            list(yaml.load_all("!!str [a]: 1\n", Loader=loader_class))
        assert info.value.problem_mark is not None
