"""Hypothesis strategies for inputs a careless user or an attacker could hand to tjc.

Three families: `token_soup` (YAML made of syntax fragments: flow and block nesting, anchors,
aliases, tags, keys, controls), `malformed_objects` (TrainJob/runtime-shaped documents with
odd values in any field: wrong types, huge or negative numbers, bad names, control characters,
long strings), and `mutated_golden` (a golden case's inputs with values replaced, keys dropped
or text cut, duplicated or spliced). Each yields a `Case` for one verb.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import yaml
from hypothesis import strategies as st

from compiler.common.jsondata import Obj
from tests.fuzz.harness import Case
from tests.goldenfile import cases, parse

FRAGMENTS = ["[", "]", "{", "}", ", ", ": ", "- ", "? ", "\n", "\n  ", "\n    ", "---\n", "...\n",
             "&a ", "&b ", "*a", "*b", "!!int ", "!!bool ", "!!float ", "!!str ", "!!set ",
             "!!binary ", "!!timestamp ", "!!map ", "!!seq ", "!!omap ", "!custom ", "~", "null",
             "apiVersion: trainer.kubeflow.org/v1alpha1\n", "kind: TrainJob\n",
             "kind: ClusterTrainingRuntime\n", "metadata: ", "name: ", "spec: ", "trainer: ",
             "numNodes: ", "runtimeRef: ", "x", "\"", "'", "|", ">", "#", "%YAML 1.1\n", "\t",
             "1.0e-7", "-1", "0x1F", "1e99999", ".inf", ".nan", "\x85", "\x7f", "\u2028",
             "\ufeff", "\\", "<<: ", "*a\n", "maybe", "2024-01-01"]
ODD_STRINGS = ["", " ", "a\nb", "../../etc/passwd", "/abs", "a/b", "..", ".", "TORCH-RT-1",
               "x" * 300, "\x85\x9b\x7f", "\u2028", "\ud800", "\x00", "a\tb", "ÄÖ", "-a-", "a.b",
               "example.com/x", "1.0e-7", "-1", "0.5", "500m", "1e400", "1e99999", "NaN",
               "2147483648", "{{ }}", "%s%n", "$(VAR)", "\\n"]
ODD_NUMBERS = [-1, 0, 1, 2, 2**31 - 1, 2**31, 2**63, -(2**63), 10**30, 0.5, 1.0e-7, 1e300]
KEYS = ["apiVersion", "kind", "metadata", "name", "namespace", "generateName", "labels",
        "annotations", "spec", "runtimeRef", "trainer", "numNodes", "numProcPerNode", "image",
        "command", "args", "env", "value", "resourcesPerNode", "requests", "limits", "cpu",
        "nvidia.com/gpu", "memory", "mlPolicy", "torch", "mpi", "template", "replicatedJobs",
        "podTemplateOverrides", "runtimePatches", "suspend", "managedBy", "initializer",
        "podGroupPolicy", "coscheduling", "sshAuthMountPath", "a\nb", "x/y/z", "A_B"]
VERBS = ["validate", "render", "explain"]


@cache
def scalars() -> st.SearchStrategy[Any]:
    """Values a field could be given, many of them wrong for it."""
    return st.one_of(st.sampled_from(ODD_STRINGS), st.sampled_from(ODD_NUMBERS), st.booleans(),
                     st.none(), st.text(max_size=6), st.integers())


@cache
def values() -> st.SearchStrategy[Any]:
    """Small trees of odd values under TrainJob-like keys."""
    return st.recursive(scalars(), lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), inner,
                        max_size=4)), max_leaves=8)


@st.composite
def token_soup(draw: st.DrawFn) -> str:
    """YAML text from syntax fragments, sometimes after a real document head."""
    head = draw(st.sampled_from(["", "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                                 "metadata:\n  name: a\nspec:\n  "]))
    return head + "".join(draw(st.lists(st.sampled_from(FRAGMENTS), max_size=40)))


@st.composite
def deep_text(draw: st.DrawFn) -> str:
    """Nesting far past any sane depth: flow, compact block sequences, or aliases of both."""
    depth = draw(st.sampled_from([99, 100, 101, 500, 30_000]))
    form = draw(st.sampled_from(["[", "{", "- ", "alias"]))
    if form == "[":
        return "a: " + "[" * depth + "]" * depth + "\n"
    if form == "{":
        return "a: " + "{a: " * depth + "1" + "}" * depth + "\n"
    if form == "- ":
        return "- " * depth + "x\n"
    return "a: &a " + "[" * 60 + "]" * 60 + "\nb: &b [" + "[*a]," * 3 + "]\nc: [[[*b]]]\n"


@st.composite
def malformed_object(draw: st.DrawFn) -> Obj:
    """A TrainJob or runtime skeleton with odd values spliced in at a few places."""
    kind = draw(st.sampled_from(["TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"]))
    doc: Obj = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind,
                "metadata": {"name": "a", "namespace": "default"},
                "spec": {"runtimeRef": {"name": "torch-distributed"},
                         "trainer": {"numNodes": 1, "image": "x",
                                     "resourcesPerNode": {"requests": {"cpu": "1"}}}}
                if kind == "TrainJob" else {"template": {"spec": {"replicatedJobs": []}}}}
    for _ in range(draw(st.integers(1, 3))):
        _splice(draw, doc, draw(values()))
    return doc


def _splice(draw: st.DrawFn, doc: Obj, value: Any) -> None:
    """Replace or add the value at a random place of the document."""
    node: Any = doc
    for _ in range(draw(st.integers(0, 4))):
        if isinstance(node, dict) and node:
            key = draw(st.sampled_from(sorted(node, key=str)))
            if not isinstance(node[key], (dict, list)):
                break
            node = node[key]
        elif isinstance(node, list) and node:
            node = node[draw(st.integers(0, len(node) - 1))]
        else:
            break
    if isinstance(node, dict):
        node[draw(st.one_of(st.sampled_from(sorted(node, key=str) or ["x"]),
                            st.sampled_from(KEYS)))] = value
    elif isinstance(node, list):
        node.append(value)


def dump(doc: Any, style: str) -> str:
    """A document as block YAML, flow YAML or JSON."""
    if style != "json":
        try:
            return yaml.dump(doc, Dumper=yaml.CSafeDumper, default_flow_style=style == "flow",
                             allow_unicode=True)
        except (yaml.YAMLError, UnicodeError):
            pass  # PyYAML cannot write every string (lone surrogates): JSON can
    return json.dumps(doc, ensure_ascii=False, default=str)  # a YAML date as its text


@cache
def golden_inputs() -> list[dict[str, str]]:
    """The input files of every golden case."""
    return [parse(path).inputs for path in cases()]


@st.composite
def mutated_golden(draw: st.DrawFn) -> dict[str, str]:
    """One to four golden cases' inputs side by side (a repository holds many), one or more
    files mutated at the data or at the text level."""
    files = {f"{i}-{name}" if i else name: text
             for i, case in enumerate(draw(st.lists(st.sampled_from(golden_inputs()),
                                                    min_size=1, max_size=4)))
             for name, text in case.items()}
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(sorted(files)))
        mutate = draw(st.sampled_from([_mutate_data, _mutate_text]))
        files[name] = mutate(draw, files[name])
    return files


def _mutate_data(draw: st.DrawFn, text: str) -> str:
    try:
        docs = [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d is not None]
    except (yaml.YAMLError, ValueError):  # an earlier text mutation broke it: keep it broken
        return text
    if not docs:
        return text
    for _ in range(draw(st.integers(1, 3))):
        _splice(draw, draw(st.sampled_from(docs)), draw(values()))
    style = draw(st.sampled_from(["block", "flow", "json"]))
    return "---\n".join(dump(d, style) + "\n" for d in docs)


def _mutate_text(draw: st.DrawFn, text: str) -> str:
    lines = text.splitlines(keepends=True) or [""]
    i = draw(st.integers(0, len(lines) - 1))
    action = draw(st.sampled_from(["drop", "dup", "cut", "insert", "swap", "indent"]))
    if action == "drop":
        del lines[i]
    elif action == "dup":
        lines.insert(i, lines[i])
    elif action == "cut":
        return "".join(lines)[:draw(st.integers(0, len(text)))]
    elif action == "insert":
        lines.insert(i, draw(st.sampled_from(FRAGMENTS)) + draw(st.sampled_from(ODD_STRINGS))
                     + "\n")
    elif action == "swap":
        j = draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines[i] = " " * draw(st.integers(1, 4)) + lines[i]
    return "".join(lines)


@st.composite
def cases_for(draw: st.DrawFn, files: st.SearchStrategy[dict[str, str]]) -> Case:
    """A run of one verb on generated files, with the flags that change its path."""
    inputs = draw(files)
    verb = draw(st.sampled_from(VERBS))
    names = sorted(inputs)
    documents = sum(1 + text.count("\n---") for text in inputs.values())
    if verb == "explain":
        extra = [arg for name in names[1:] for arg in ("--runtime", name)]
        return Case("explain", [names[0], *extra], inputs, documents)
    flags = draw(st.lists(st.sampled_from(_FLAGS[verb]), max_size=2, unique=True))
    return Case(verb, [*names, *[f for flag in flags for f in flag.split()]], inputs, documents)


_FLAGS = {"render": ["--no-validate", "-o json", "--no-default-policies", "--output-dir out",
                     "--no-builtin-runtimes", "-q"],
          "validate": ["--strict", "-o json", "--no-default-policies", "-q",
                       "--no-builtin-runtimes"]}


def single(text: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, str]]:
    """One generated file named `in.yaml`."""
    return text.map(lambda body: {"in.yaml": body})


def soup_stream(most: int = 1) -> st.SearchStrategy[str]:
    """Up to `most` token soups as one YAML stream."""
    return st.lists(token_soup(), min_size=1, max_size=most).map("\n---\n".join)


def objects_text(most: int = 3) -> st.SearchStrategy[str]:
    """One to `most` malformed objects, each dumped in some style."""
    return st.lists(st.tuples(malformed_object(), st.sampled_from(["block", "flow", "json"])),
                    min_size=1, max_size=most).map(
        lambda docs: "---\n".join(dump(d, s) + "\n" for d, s in docs))


@st.composite
def differential_cases(draw: st.DrawFn) -> Case:
    """Documents for every tool at once (`tests.fuzz.differential`): golden inputs mutated
    at the data level (so that most still parse), or malformed objects with a golden case's
    runtime beside them."""
    files = dict(draw(st.sampled_from(golden_inputs())))
    if draw(st.booleans()):
        for _ in range(draw(st.integers(1, 3))):
            name = draw(st.sampled_from(sorted(files)))
            files[name] = _mutate_data(draw, files[name])
    else:
        files["trainjob.yaml"] = draw(objects_text())
    documents = sum(1 + text.count("\n---") for text in files.values())
    return Case("differential", [], files, documents)


def all_cases() -> st.SearchStrategy[Case]:
    """Every family, mixed."""
    return st.one_of(cases_for(single(token_soup())), cases_for(single(deep_text())),
                     cases_for(single(objects_text())), cases_for(mutated_golden()))
