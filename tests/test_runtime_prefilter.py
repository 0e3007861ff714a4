"""Files are parsed for runtimes only when they can hold one, and never missed when they do."""

from __future__ import annotations

import json

import pytest

from bench.corpus import _dump, corpus
from compiler.io.inputs import _may_hold_runtime
from compiler.io.loader import Source

RUNTIME = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\nmetadata: {name: a}\n"


def test_a_trainjob_that_only_refers_to_a_runtime_is_not_parsed_twice() -> None:
    runtimes, jobs = corpus(50)
    plain = [j for j in jobs if "env" not in j["spec"]["trainer"]
             or all("valueFrom" not in e for e in j["spec"]["trainer"]["env"])]
    assert plain and not any(_may_hold_runtime(Source("j.yaml", _dump(j))) for j in plain)
    assert all(_may_hold_runtime(Source("r.yaml", _dump(r))) for r in runtimes)


@pytest.mark.parametrize("text", [
    RUNTIME,
    "---\n" + _dump({"kind": "TrainJob", "spec": {"runtimeRef": {
        "kind": "ClusterTrainingRuntime"}}}) + "---\n" + RUNTIME,
    "".join("  " + line + "\n" for line in RUNTIME.splitlines()),  # an indented document
    "{apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainingRuntime}\n",
    json.dumps({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime"},
               indent=2),
    "apiVersion: v1\nkind: List\nitems:\n- apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "  kind: TrainingRuntime\n",
    "kind: >-\n  ClusterTrainingRuntime\n",
])
def test_every_way_of_writing_a_runtime_is_parsed(text: str) -> None:
    assert _may_hold_runtime(Source("x.yaml", text))
