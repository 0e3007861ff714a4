"""A differential test of `compiler.kube.schema` against the `jsonschema` library.

The project validates with a validator of its own (compiled once per kind, with the Kubernetes
extensions the library lacks, several times faster). On the keywords both implement, both must
flag exactly the same places, for the documents of every golden case and for mutations of
them that break enum, length, range, pattern, item-count and required-field constraints.
"""

from __future__ import annotations

import random
from copy import deepcopy
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from compiler.common.jsondata import Obj
from compiler.io.loader import Source, parse_source
from compiler.kube import schema, structural
from compiler.kube.defaults import default_in_place
from tests import goldenfile

KEYWORDS = {"enum": "TJC-SCHEMA-ENUM", "maxLength": "TJC-SCHEMA-MAXLENGTH",
            "minLength": "TJC-SCHEMA-MINLENGTH", "minimum": "TJC-SCHEMA-MINIMUM",
            "maximum": "TJC-SCHEMA-MAXIMUM", "pattern": "TJC-SCHEMA-PATTERN",
            "maxItems": "TJC-SCHEMA-MAXITEMS", "minItems": "TJC-SCHEMA-MINITEMS",
            "required": "TJC-SCHEMA-REQUIRED"}
KINDS = ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")


def _documents() -> list[tuple[str, Obj]]:
    out = []
    for path in goldenfile.cases():
        for name, text in goldenfile.parse(path).inputs.items():
            for doc in parse_source(Source(name, text))[0]:
                kind = doc.data.get("kind")
                if kind in KINDS:
                    data, _ = structural.sanitize(kind, doc.data, subject="document")
                    out.append((kind, default_in_place(kind, data)))
    return out


def _library(kind: str, doc: Obj) -> set[tuple[str, tuple[Any, ...]]]:
    validator = jsonschema.Draft4Validator(schema.load_schema(kind))
    return {(KEYWORDS[e.validator], tuple(e.absolute_path))
            for e in validator.iter_errors(doc) if e.validator in KEYWORDS}


def _ours(kind: str, doc: Obj) -> set[tuple[str, tuple[Any, ...]]]:
    return {(d.rule, d.path) for d in schema.validate(kind, doc)
            if d.rule in KEYWORDS.values()}


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [(path, value), *[leaf for i, v in enumerate(value)
                                 for leaf in _leaves(v, (*path, i))]]
    return [(path, value)]


def _mutations(doc: Obj, rng: random.Random) -> list[Obj]:
    out = []
    for path, value in rng.sample(_leaves(doc), min(12, len(_leaves(doc)))):
        if not path:
            continue
        if isinstance(value, str):
            new: Any = rng.choice(["x" * 70000, "", "Not a Valid-Value!", "9"])
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            new = rng.choice([-5, 0, 2**31 + 1])
        elif isinstance(value, list):
            new = [] if rng.random() < 0.5 else value * 70
        else:
            continue
        copy = deepcopy(doc)
        mutated: Any = copy
        for part in path[:-1]:
            mutated = mutated[part]
        mutated[path[-1]] = new
        if rng.random() < 0.2 and isinstance(mutated, dict):
            del mutated[path[-1]]
        out.append(copy)
    return out


DOCUMENTS = _documents()


def test_there_are_documents_to_compare() -> None:
    assert len(DOCUMENTS) > 100


@pytest.mark.parametrize("index", range(len(DOCUMENTS)))
def test_same_findings_as_jsonschema(index: int) -> None:
    kind, doc = DOCUMENTS[index]
    assert _ours(kind, doc) == _library(kind, doc)
    rng = random.Random(index)
    for mutated in _mutations(doc, rng):
        assert _ours(kind, mutated) == _library(kind, mutated), Path(kind)


def test_the_mutations_do_break_constraints() -> None:
    found: set[str] = set()
    broken = 0
    for index, (kind, doc) in enumerate(DOCUMENTS):
        for mutated in _mutations(doc, random.Random(index)):
            findings = _ours(kind, mutated)
            broken += bool(findings)
            found |= {rule for rule, _ in findings}
    assert broken >= 100
    assert len(found) >= 6, found
