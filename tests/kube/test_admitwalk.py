"""The one-walk admission (`compiler.kube.admitwalk`) against its three passes run one by one.

`admitwalk.admit` must give exactly what the structural pass, then CRD defaulting, then the
schema check give separately (after the admission's de-duplication by rule and path): the same
object, the same structural diagnostics in the same order, the same schema diagnostics. Checked
on every golden input and built-in runtime and on mutations of them that null, retype, drop,
add and duplicate values, so every branch of the walk (pruning, type errors, defaults, list
items with nulls, kept subtrees) is exercised.
"""

from __future__ import annotations

import json
import random
from copy import deepcopy
from typing import Any

import pytest

from compiler.common.diagnostics import Diagnostic
from compiler.common.jsondata import Obj
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Source, parse_source
from compiler.kube import admitwalk, schema, structural
from compiler.kube.defaults import default_in_place
from tests import goldenfile

KINDS = ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime", "JobSet")
REPLACEMENTS: list[Any] = [None, "text", 7, 2.0, 2.5, True, [], {}, [None, 1], {"x": None},
                           ["a", "a"], -1, "8 Gi", [{"name": "a"}, {"name": "a"}]]


def _documents() -> list[tuple[str, Obj]]:
    out = [(str(d.data["kind"]), d.data) for d in builtin_runtimes()]
    for path in goldenfile.cases():
        for name, text in goldenfile.parse(path).inputs.items():
            out += [(str(d.data["kind"]), d.data) for d in parse_source(Source(name, text))[0]
                    if d.data.get("kind") in KINDS]
    return out


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [path] + [p for k, v in value.items() for p in _paths(v, (*path, k))]
    if isinstance(value, list):
        return [path] + [p for i, v in enumerate(value) for p in _paths(v, (*path, i))]
    return [path]


def _mutations(doc: Obj, rng: random.Random) -> list[Obj]:
    out = []
    paths = [p for p in _paths(doc) if p]
    for path in rng.sample(paths, min(25, len(paths))):
        copy = deepcopy(doc)
        parent: Any = copy
        for part in path[:-1]:
            parent = parent[part]
        choice = rng.random()
        if choice < 0.15 and isinstance(parent, dict):
            del parent[path[-1]]
        elif choice < 0.3 and isinstance(parent, dict):
            parent["unknownField"] = {"a": [1, None]}
        elif choice < 0.4 and isinstance(parent, list):
            parent.insert(0, None)
        elif choice < 0.5 and isinstance(parent, list):
            parent.append(deepcopy(parent[path[-1]]))
        else:
            parent[path[-1]] = deepcopy(rng.choice(REPLACEMENTS))
        out.append(copy)
    return out


def _separately(kind: str, doc: Obj) -> tuple[Obj, list[Diagnostic], list[Diagnostic]]:
    data, found = structural.sanitize(kind, dict(doc), subject="document")
    data = default_in_place(kind, data)
    return data, found, schema.validate(kind, data)


def _filtered(first: list[Diagnostic], then: list[Diagnostic]) -> list[Diagnostic]:
    seen = {(d.rule, d.path) for d in first}
    return [d for d in then if (d.rule, d.path) not in seen]


DOCUMENTS = _documents()


def test_there_are_documents_of_every_kind() -> None:
    assert {kind for kind, _ in DOCUMENTS} >= {"TrainJob", "ClusterTrainingRuntime"}
    assert len(DOCUMENTS) > 100


@pytest.mark.parametrize("index", range(0, len(DOCUMENTS), 3))
def test_one_walk_gives_what_the_three_passes_give(index: int) -> None:
    kind, doc = DOCUMENTS[index]
    rng = random.Random(index)
    for variant in [doc, *_mutations(doc, rng)]:
        data, first, then = admitwalk.admit(kind, deepcopy(variant))
        want_data, want_first, want_then = _separately(kind, deepcopy(variant))
        assert data == want_data
        assert json.dumps(data) == json.dumps(want_data)  # the same keys in the same order
        assert first == want_first
        assert _filtered(first, then) == _filtered(want_first, want_then)


def test_the_mutations_reach_every_kind_of_problem() -> None:
    rules: set[str] = set()
    for index in range(0, len(DOCUMENTS), 7):
        kind, doc = DOCUMENTS[index]
        for variant in _mutations(doc, random.Random(index)):
            _, first, then = admitwalk.admit(kind, variant)
            rules |= {d.rule for d in first + then}
    assert {"TJC-SCHEMA-TYPE", "TJC-SCHEMA-REQUIRED", "TJC-UNKNOWN-FIELD",
            "TJC-SCHEMA-DUPLICATE-KEY", "TJC-SCHEMA-ENUM"} <= rules, rules
