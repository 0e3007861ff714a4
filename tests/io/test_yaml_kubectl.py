"""Tags, directives and document markers read as kubectl reads them (the loader).

kubectl cuts a manifest file at its `---` lines and reads each part's first document with
sigs.k8s.io/yaml (go-yaml v2); the values here are what the parity oracle gives for each text
(tests/parity/test_parity.py compares them with the oracle itself, and many more generated ones).
"""

from __future__ import annotations

from typing import Any

import pytest

from compiler.common.diagnostics import Diagnostic
from compiler.io.loader import Source, iter_source
from compiler.io.yamltags import is_timestamp


def _read(text: str, stream: bool = True) -> tuple[list[Any], list[str]]:
    """The documents' data up to the first problem, and the problems' located lines."""
    docs: list[Any] = []
    source = Source("m.yaml", text)
    source.stream = stream
    for item in iter_source(source):
        if isinstance(item, Diagnostic):
            return docs, [item.text()]
        docs.append(item.data)
    return docs, []


TAGGED_VALUES = [
    ("a: ! 1\n", "1"),  # the non-specific tag: a string to go-yaml, not a plain scalar
    ("a: ! \"1\"\n", "1"),
    ("a: [! true, ! ~]\n", ["true", "~"]),
    ("a: !!binary aGVsbG8=\n", "hello"),  # decoded
    ("a: !!binary |\n  aGVs\n  bG8=\n", "hello"),  # line breaks in base64 are passed over
    ("a: !!binary /w==\n", "\ufffd"),  # a byte that is not UTF-8, as Go's JSON writes it
    ("a: !!binary 4oI=\n", "\ufffd\ufffd"),  # one U+FFFD per byte, as Go (Python merges)
    ("a: !foo 1\n", "1"),  # an unknown tag names nothing: the text
    ("a: !<tag:example.com,2000:x> yes\n", "yes"),
    ("a: !!python/name:os.system\n", ""),
    ("a: !!bool y\n", True),  # YAML 1.1's y, as plain
    ("a: !!str {b: 1}\n", {"b": 1}),  # a tag on a collection changes nothing
    ("a: !!set {b, c}\n", {"b": None, "c": None}),
    ("a: !!omap [{b: 1}, {c: 2}]\n", [{"b": 1}, {"c": 2}]),
    ("a: !!map x\n", "x"),
    ("a: [!foo, 0]\n", ["0"]),  # go-yaml takes `,`, `[` and `]` into a tag: `!foo,`
    ("a: !foo[x] 1\n", "1"),
]
TAGGED_KEYS = [
    ("!!int \"1\": x\n", "1"), ("!!float 16777217: x\n", "1.6777216e+07"),
    ("!!binary aGk=: x\n", "hi"), ("!!bool \"on\": x\n", "true"),
]
REFUSED_VALUES = [
    ("a: !!float 9223372036854775808\n",
     "m.yaml:1:4: error: cannot parse YAML: cannot decode !!int `9223372036854775808` as a "
     "!!float"),  # an unsigned int does not serve a float in go-yaml
    ("a: !!int 1:20\n", "m.yaml:1:4: error: cannot parse YAML: cannot decode !!str `1:20` as"),
    ("a: !!timestamp 2001-02-29\n", "m.yaml:1:4: error: cannot parse YAML: cannot decode !!str"),
    ("b: 1\na: !!binary aGVsbG8\n",
     "m.yaml:2:4: error: cannot parse YAML: !!binary value contains invalid base64 data"),
    ("a: [!<tag:yaml.org,2002:str>, 1]\n",  # go-yaml wants a blank after a verbatim tag
     "m.yaml:1:29: error: cannot parse YAML: did not find expected whitespace or line break"),
]
REFUSED_STREAMS = [
    ("%YAML 1.2\n---\na: 1\n",
     "m.yaml:1:1: error: cannot parse YAML: found incompatible YAML document: kubectl reads "
     "%YAML 1.1 only, not 1.2"),
    ("# a manifest\n%YAML 1.1\n---\na: 1\n",
     "m.yaml:2:1: error: cannot parse YAML: the directive '%YAML 1.1' has no document"),
    ("%TAG !e! tag:yaml.org,2002:\n---\na: !e!str 1\n",
     "m.yaml:1:1: error: cannot parse YAML: the directive '%TAG !e! tag:yaml.org,2002:' has "),
    ("a: 1\n---\n%YAML 1.1\n---\nb: 2\n", "m.yaml:3:1: error: cannot parse YAML: the directive"),
    ("--- {apiVersion: v1, kind: ConfigMap}\n",
     "m.yaml:1:5: error: cannot parse YAML: a line starting with --- separates documents and "
     "may hold only a comment after it, found '{apiVersion: v1, kind: ConfigMap}'"),
    ("a: 1\n---b: 2\n", "m.yaml:2:4: error: cannot parse YAML: a line starting with --- "),
    ("a: 1\n---\nb: 2\n---\t!!str x\n", "m.yaml:4:5: error: cannot parse YAML: a line starting"),
]
READ_STREAMS = [
    ("a: 1\n...\nb: 2\n", [{"a": 1}]),  # kubectl reads a part's first document only
    ("a: 1\n--- # next\nb: 2\n---#c\nc: 3\n", [{"a": 1}, {"b": 2}, {"c": 3}]),
    ("a: |\n  x", [{"a": "x\n"}]),  # kubectl ends the last line with a line break
    ("a: 1\r\n---\r\nb: |\r\n  x", [{"a": 1}, {"b": "x\n"}]),
]


@pytest.mark.parametrize(("text", "value"), TAGGED_VALUES)
def test_a_tagged_value_is_what_kubectl_reads(text: str, value: Any) -> None:
    assert _read(text) == ([{"a": value}], [])


@pytest.mark.parametrize(("text", "key"), TAGGED_KEYS)
def test_a_tagged_key_is_named_as_kubectl_names_it(text: str, key: str) -> None:
    assert _read(text) == ([{key: "x"}], [])


@pytest.mark.parametrize(("text", "problem"), REFUSED_VALUES)
def test_a_tagged_value_kubectl_refuses_is_a_located_error(text: str, problem: str) -> None:
    docs, problems = _read(text)
    assert not docs and len(problems) == 1 and problems[0].startswith(problem), problems


@pytest.mark.parametrize(("text", "problem"), REFUSED_STREAMS)
def test_a_directive_or_a_separator_kubectl_refuses_is_a_located_error(
        text: str, problem: str) -> None:
    problems = _read(text)[1]
    assert len(problems) == 1 and problems[0].startswith(problem), problems


@pytest.mark.parametrize(("text", "docs"), READ_STREAMS)
def test_the_documents_are_those_kubectl_reads(text: str, docs: list[Any]) -> None:
    assert _read(text) == (docs, [])


def test_a_kubeconfig_is_one_document_as_client_go_reads_it() -> None:
    """client-go reads a kubeconfig file whole with sigs.k8s.io/yaml: a `%YAML 1.1` header
    before its `---` is fine there, `%YAML 1.2` is not."""
    assert _read("%YAML 1.1\n---\nkind: Config\n---\nkind: X\n", stream=False) == (
        [{"kind": "Config"}], [])
    assert _read("kind: Config\n...\n%YAML 1.2\n", stream=False) == ([{"kind": "Config"}], [])
    assert _read("%YAML 1.2\n---\nkind: Config\n", stream=False)[1] == [
        "m.yaml:1:1: error: cannot parse YAML: found incompatible YAML document: kubectl "
        "reads %YAML 1.1 only, not 1.2 [TJC-INPUT-SYNTAX]"]


def test_a_document_located_in_a_later_part_is_found_at_its_line() -> None:
    """Positions follow kubectl's parts: a problem in the second part is at its own line."""
    source = Source("m.yaml", "%YAML 1.1\n---\na: 1\n")
    source.stream = False
    doc = next(d for d in iter_source(source) if not isinstance(d, Diagnostic))
    assert doc.locate(("a",)).line == 3
    source = Source("m.yaml", "a: 1\n...\nb: 2\n---\nc:\n  d: 1\n")
    docs = [d for d in iter_source(source) if not isinstance(d, Diagnostic)]
    assert [d.data for d in docs] == [{"a": 1}, {"c": {"d": 1}}]
    assert str(docs[1].locate(("c", "d"))) == "m.yaml:6:6"


@pytest.mark.parametrize(("text", "taken"), [
    ("2001-12-14", True), ("2001-1-2", True), ("2001-12-14T21:59:43.10-05:00", True),
    ("2001-12-14 21:59:43", True), ("2001-12-14   1:2:3.5", True), ("2000-02-29", True),
    ("2001-02-29", False), ("2001-13-01", False), ("2001-12-14T24:00:00Z", False),
    ("2001-12-14T21:59:43", False), ("2001-12-14 21:59:43 -5", False), ("01-12-14", False),
    ("2001-12-14T21:59:43+25:00", False), ("2001-12-14T21:59:43+24:00", True),
])
def test_timestamps_are_go_yaml_s(text: str, taken: bool) -> None:
    assert is_timestamp(text) is taken
