"""Hypothesis strategies for YAML text with tags, directives and document markers.

For the differential tests against kubectl's reading (tests/parity/test_parity.py): tagged scalars
(every standard tag, the non-specific `!`, verbatim and unknown tags; plain, single- and
double-quoted; texts that are numbers, YAML 1.1 words, timestamps, base64), tagged
collections and merge keys, streams of documents with directives, `---` lines and `...`
ends, and manifests of objects that hold such values (for the pass-through tests).
"""

from __future__ import annotations

import base64
import json
import re

from hypothesis import strategies as st

TAGS = ["!", "!!str", "!!int", "!!float", "!!bool", "!!null", "!!binary", "!!timestamp",
        "!!set", "!!omap", "!!pairs", "!!map", "!!seq", "!!merge", "!!value", "!foo",
        "!<tag:yaml.org,2002:int>", "!<tag:yaml.org,2002:float>", "!<tag:yaml.org,2002:str>",
        "!<!>", "!<tag:example.com,2000:x>", "!!python/name:os.system"]
NUMBER = st.one_of(
    st.from_regex(r"[+-]?[0-9_]{1,6}(\.[0-9_]{0,3})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.from_regex(r"[+-]?0[xXobOB][0-9a-fA-F_]{0,8}", fullmatch=True),
    st.sampled_from(["0", "-0", "08", "0777", "1:20", "9223372036854775808", "-1.5e-3", ".5",
                     "18446744073709551616", "1e400", "3.", "16777217", "1e7", "0.1"]))
WORD = st.sampled_from(["y", "N", "yes", "On", "off", "true", "False", "~", "null", "NULL", "",
                        ".inf", "-.Inf", ".nan", "<<", "=", "x", "hello world", "0X1F"])
TIMESTAMP = st.one_of(
    st.from_regex(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}"
                  r"([.,][0-9]{1,4})?(Z|[+-][0-9]{2}:[0-9]{2})?)?", fullmatch=True),
    st.sampled_from(["2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5",
                     "2001-02-29", "2000-02-29", "2001-12-14  21:59:43"]))
BASE64 = st.one_of(
    st.binary(max_size=9).map(lambda data: base64.b64encode(data).decode()),
    st.sampled_from(["aGVsbG8", "aGk", "a", "====", "aGk=aGk=", "aGl=", "/w==", "4oI=",
                     "aGVs\nbG8=", "aG k="]))
TEXT = st.one_of(NUMBER, WORD, TIMESTAMP, BASE64)
# Texts written plain only where they are a single plain scalar in block and flow context.
_PLAIN_SAFE = re.compile(r"(?:(?:[A-Za-z0-9+/=._~<]|-(?=[0-9.]))[A-Za-z0-9+/=._~<:-]*"
                         r"(?: [A-Za-z0-9+/=._:-]+)*)?")


@st.composite
def scalar(draw: st.DrawFn, tagged: bool = True) -> str:
    """A scalar as written in a document: a tag (or none), then its text, plain or quoted."""
    text = draw(TEXT)
    style = draw(st.sampled_from(["plain", "plain", "single", "double"]))
    if style == "plain" and (not _PLAIN_SAFE.fullmatch(text) or text.endswith(":")):
        style = "double"
    body = text if style == "plain" else json.dumps(text) if style == "double" \
        else "'" + text.replace("'", "''") + "'"
    tag = draw(st.sampled_from(TAGS)) if tagged else ""
    return f"{tag} {body}".strip() if body or not tag else tag


@st.composite
def tagged_document(draw: st.DrawFn) -> str:
    """A small mapping document with tagged nodes in one of the places they can stand."""
    node, tag = draw(scalar()), draw(st.sampled_from(TAGS))
    shape = draw(st.sampled_from(["value", "key", "flow", "sequence", "mapping", "block",
                                  "merge"]))
    merge = draw(st.sampled_from(["<<", "! <<", "!!merge <<", "!!str <<", "'<<'", "! '<<'",
                                  "!<!> <<"]))
    return {
        "value": f"a: {node}\n",
        "key": f"{node} : x\n",
        "flow": f"a: [{node}, 1]\n",
        "sequence": f"a:\n- {node}\n- {tag} [{node}]\n",
        "mapping": f"a: {tag} {{b: {node}}}\n",
        "block": f"a: {tag}\n  b: {node}\n",
        "merge": f"a: {{{merge}: {{x: {node}, w: 0}}, w: 1}}\n",
    }[shape]


DIRECTIVE = st.sampled_from(["%YAML 1.1", "%YAML 1.2", "%YAML 2.0", "%YAML 1.01",
                             "%TAG !e! tag:example.com,2000:", "%TAG !! tag:example.com,2000:",
                             "%TAG !e! !", "%FOO bar", "# a comment", ""])
START = st.sampled_from(["---", "---", "--- # c", "---  ", "--- a: 1", "--- !!str x", "---x",
                         "----", "--- |", "---#c", "--- {a: 1}", "--- !e!x 1"])
END = st.sampled_from(["", "", "...", "... # c"])
BODY = st.one_of(tagged_document(), st.sampled_from([
    "a: 1", "b: !e!x 1", "c: !!int 1", "d: x", "", "# only a comment", "e: ! 2", "f: |\n  x",
    "g: !!binary aGk="]))


@st.composite
def stream(draw: st.DrawFn) -> str:
    """One to three documents, each with directives, a start line, a body and an end line
    where drawn; the last line with or without its line break. Each body sits under a key of
    its own (where no start line parts two bodies they are one mapping, without duplicates)."""
    documents = []
    for index in range(draw(st.integers(1, 3))):
        lines: list[str] = draw(st.lists(DIRECTIVE, max_size=2))
        started: bool = draw(st.booleans())
        if lines or started:
            lines.append(draw(START))
        body = draw(BODY).rstrip("\n").replace("\n", "\n  ")
        lines.append(f"d{index}:\n  {body}" if body else f"d{index}:")
        end = draw(END)
        documents.append("\n".join([*lines, end] if end else lines))
    return "\n".join(documents) + draw(st.sampled_from(["\n", ""]))


@st.composite
def manifest(draw: st.DrawFn) -> list[str]:
    """The texts of one to three objects (ConfigMaps and custom objects) whose values, and
    some keys, are scalars tagged or written in any style: what a pass-through keeps."""
    objects = []
    for index in range(draw(st.integers(1, 3))):
        head = draw(st.sampled_from([
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{index}\ndata:\n",
            f"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w{index}\nspec:\n"]))
        values = draw(st.lists(st.one_of(scalar(), scalar(tagged=False)), min_size=1,
                               max_size=4))
        lines = [f"  k{i}: {value}" for i, value in enumerate(values)]
        if draw(st.booleans()):
            lines.append(f"  {draw(scalar())} : key")
        if draw(st.booleans()):
            lines.append(f"  list: [{draw(scalar())}, {draw(scalar(tagged=False))}]")
        if draw(st.booleans()):  # a block scalar: its text may end with a line break
            style = draw(st.sampled_from(["|", "|-", "|+", ">", ">-"]))
            word = draw(st.sampled_from(["hello", "1", "x.y", "a: b", "true", "- x", "#"]))
            lines.append(f"  block: {style}\n    {word}")
        objects.append(head + "\n".join(lines) + "\n")
    return objects
