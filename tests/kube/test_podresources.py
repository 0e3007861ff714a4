"""`compiler.kube.podresources.validate` gives what the full walk it replaced gave
(`tests.reference_checks.pod_validate`): the same diagnostics in the same order, on generated
documents (holders on and off the CRDs' routes, wrongly typed values, shared and deep
values, data that is not plain), on the built-in runtimes and examples, and on edits of them.
The routes are the CRDs' own: derived here from `schemas/`."""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from compiler.common.jsondata import Obj, copy_json
from compiler.core import admission
from compiler.kube import podresources
from tests.reference_checks import pod_validate

ROOT = Path(__file__).resolve().parents[2]
HOLDER_KEYS = ("resources", "resourcesPerNode")
KINDS = ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")
AMOUNTS: list[Any] = ["1", "-1", "-0", " -2 ", "0.5", "1.5", "500m", "-500m", "1e-3", "2Gi",
                      "8 Gi", "", "x", 2, -3, 0, True, None, 1.5, -0.5, ["1"], {"a": "1"}]
NAMES = ["cpu", "memory", "nvidia.com/gpu", "example.com/foo", "kubernetes.io/x",
         "requests.example.com/x", "a/b/c", "hugepages-2Mi", 7]
KEYS = [*HOLDER_KEYS, *sorted(podresources._ROUTE), "requests", "limits", "env", "labels",
        "metadata", "name", "value", "resource", "resourcesX", "args"]


def _ancestors(schema: Any, path: tuple[str, ...], out: set[str]) -> None:
    """Property names on the way to every `resources`/`resourcesPerNode` property."""
    if not isinstance(schema, dict):
        return
    for key, sub in (schema.get("properties") or {}).items():
        if key in HOLDER_KEYS:
            out.update(path)
        _ancestors(sub, (*path, key), out)
    for nested in ("items", "additionalProperties"):
        _ancestors(schema.get(nested), path, out)


def test_routes_are_the_crds() -> None:
    found: set[str] = set()
    for kind in ("trainjob", "trainingruntime", "clustertrainingruntime"):
        _ancestors(json.loads((ROOT / "schemas" / f"{kind}.json").read_text()), (), found)
    assert found == podresources._ROUTE


amounts = st.dictionaries(st.sampled_from(NAMES), st.sampled_from(AMOUNTS), max_size=3)
holder = st.fixed_dictionaries({}, optional={"requests": amounts, "limits": amounts})
scalars = st.one_of(st.sampled_from(AMOUNTS[:-2]), st.text("resourcs-P", max_size=12))
values = st.recursive(
    st.one_of(scalars, holder),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
    max_leaves=25)


@given(values)
def test_generated_documents(doc: Any) -> None:
    assert podresources.validate(doc) == pod_validate(doc)


@given(holder, st.dictionaries(st.sampled_from(KEYS), values, max_size=2),
       st.dictionaries(st.sampled_from(KEYS), values, max_size=2))
def test_trainjob_shaped(resources: Obj, trainer: Obj, rest: Obj) -> None:
    """A TrainJob's own holder, maybe with others anywhere."""
    doc = {**rest, "spec": {"trainer": {**trainer, "resourcesPerNode": resources}}}
    assert podresources.validate(doc) == pod_validate(doc)


@given(st.dictionaries(st.sampled_from(KEYS), values, max_size=4), st.integers(0, 3))
def test_shared_values(doc: Obj, times: int) -> None:
    """A YAML alias makes one value appear at several places: each place counts."""
    shared = {"spec": {"trainer": doc, "template": [doc] * times}, "resources": doc}
    assert podresources.validate(shared) == pod_validate(shared)


def test_not_plain_data_and_depth() -> None:
    bad = {"requests": {"cpu": "-1"}}
    odd = OrderedDict(spec=OrderedDict(trainer={"resourcesPerNode": bad}))
    assert [d.path for d in podresources.validate(odd)] == [
        ("spec", "trainer", "resourcesPerNode", "requests", "cpu")] == \
        [d.path for d in pod_validate(odd)]
    deep: Any = {"resources": bad}
    for _ in range(120):
        deep = {"spec": deep}
    assert podresources.validate(deep) == pod_validate(deep) == []
    assert podresources.validate("resources") == pod_validate("resources") == []


def _documents() -> list[Obj]:
    docs = []
    for folder in ("runtimes", "examples"):
        for path in sorted((ROOT / folder).rglob("*.yaml")):
            try:
                found = list(yaml.safe_load_all(path.read_text()))
            except yaml.YAMLError:
                continue  # a chart's template, not YAML until rendered
            docs += [d for d in found if isinstance(d, dict) and d.get("kind") in KINDS]
    return docs


def _holders(value: Any) -> list[dict[str, Any]]:
    """Every holder of a document, in walk order."""
    if isinstance(value, list):
        return [h for item in value for h in _holders(item)]
    if not isinstance(value, dict):
        return []
    out = [item for key, item in value.items() if key in HOLDER_KEYS and isinstance(item, dict)]
    return out + [h for item in value.values() for h in _holders(item)]


def test_builtin_runtimes_and_examples() -> None:
    """Each document as the validate pipeline hands it over, then with each holder in turn
    given a negative and a fractional GPU amount, and a holder off the routes."""
    docs = _documents()
    assert len(docs) >= 10
    checked = 0
    for doc in docs:
        data, _ = admission.check_object(str(doc.get("kind")), doc)
        assert podresources.validate(data) == pod_validate(data)
        for i in range(len(_holders(data))):
            edited = copy_json(data)
            _holders(edited)[i].setdefault("limits", {}).update(
                {"cpu": "-1", "nvidia.com/gpu": "0.5"})
            new = podresources.validate(edited)
            assert new == pod_validate(edited)
            assert {d.rule for d in new} == {"TJC-RESOURCE-NEGATIVE", "TJC-RESOURCE-NOT-INTEGER"}
            checked += 1
        edited = copy_json(data)
        edited.setdefault("metadata", {})["labels"] = {"x": {"resources": {
            "requests": {"memory": "-1Gi"}}}}
        assert [d.path for d in podresources.validate(edited)] == \
            [d.path for d in pod_validate(edited)]
        assert ("metadata", "labels", "x", "resources", "requests", "memory") in \
            [d.path for d in pod_validate(edited)]
    assert checked >= 10
