"""One failing and one passing case for each rule of the input and resolution layers (the
rules the structural pass, the runtime table and the compile itself report)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from compiler import compile_trainjob
from compiler.common.diagnostics import Diagnostic
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Source
from compiler.validate.documents import validate_stream

JOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: job
  namespace: default
spec:
  runtimeRef:
    name: {runtime}
  trainer:
    numNodes: 1
    resourcesPerNode:
      limits:
        cpu: {cpu}
"""
RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: {name}
spec:
  mlPolicy:
    numNodes: {nodes}
    jax: {{}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels:
                trainer.kubeflow.org/trainjob-ancestor-step: trainer
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: img:1
"""


@dataclass(frozen=True)
class Case:
    """Documents (one source each) that make `rule` fire, or not."""

    id: str
    rule: str
    docs: tuple[str, ...]
    fires: bool = True


def job(runtime: str = "jax-distributed", cpu: str = '"2"', extra: str = "") -> str:
    return JOB.format(runtime=runtime, cpu=cpu) + extra


def runtime(name: str = "mine", nodes: str = "1") -> str:
    return RUNTIME.format(name=name, nodes=nodes)


CASES = [
    Case("quantity-bad", "TJC-SCHEMA-QUANTITY", (job(cpu="two"),)),
    Case("quantity-ok", "TJC-SCHEMA-QUANTITY", (job(cpu="1500m"),), fires=False),
    Case("unknown-field", "TJC-UNKNOWN-FIELD", (job(extra="  bogus: 1\n"),)),
    Case("known-fields", "TJC-UNKNOWN-FIELD", (job(),), fires=False),
    Case("runtime-invalid", "TJC-RUNTIME-INVALID", (runtime(nodes='"x"'), job("mine"))),
    Case("runtime-valid", "TJC-RUNTIME-INVALID", (runtime(), job("mine")), fires=False),
    Case("runtime-duplicate", "TJC-RUNTIME-DUPLICATE", (runtime(), runtime(), job("mine"))),
    Case("runtime-once", "TJC-RUNTIME-DUPLICATE", (runtime(), job("mine")), fires=False),
    Case("runtime-override", "TJC-RUNTIME-OVERRIDE", (runtime("jax-distributed"), job())),
    Case("runtime-own-name", "TJC-RUNTIME-OVERRIDE", (runtime("jax-mine"), job()),
         fires=False),
    Case("no-kind", "TJC-INPUT-NO-KIND", ("kind: TrainJob\nmetadata: {name: x}\n",)),
    Case("not-kubernetes", "TJC-INPUT-NOT-KUBERNETES", ("resources: [a.yaml]\n",)),
    Case("helm-template", "TJC-INPUT-TEMPLATE", ("metadata:\n  name: {{ .Values.name }}\n"
                                                 "  x: {{- include \"a\" . }}\n",)),
    Case("with-kind", "TJC-INPUT-NO-KIND", (job(),), fires=False),
    Case("not-object", "TJC-INPUT-NOT-OBJECT", ("- a\n- b\n",)),
    Case("object", "TJC-INPUT-NOT-OBJECT", (job(),), fires=False),
    Case("too-deep", "TJC-INPUT-TOO-DEEP", ("a: " + "[" * 3000 + "]" * 3000 + "\n",)),
    Case("shallow", "TJC-INPUT-TOO-DEEP", ("a: [[[1]]]\n",), fires=False),
]


def _found(case: Case) -> list[Diagnostic]:
    sources = [Source(f"doc{i}.yaml", text) for i, text in enumerate(case.docs)]
    return list(validate_stream(sources, builtin_runtimes()))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule(case: Case) -> None:
    found = _found(case)
    hits = [d for d in found if d.rule == case.rule]
    assert bool(hits) == case.fires, [d.text() for d in found]
    for hit in hits:
        assert hit.locations and hit.locations[0].line >= 1


def test_runtime_mismatch_in_the_library_api() -> None:
    import yaml

    trainjob = yaml.safe_load(job("torch-distributed"))
    jax = next(d.data for d in builtin_runtimes() if d.data["metadata"]["name"] ==
               "jax-distributed")
    torch = next(d.data for d in builtin_runtimes() if d.data["metadata"]["name"] ==
                 "torch-distributed")
    assert [d.rule for d in compile_trainjob(trainjob, jax).diagnostics] == [
        "TJC-RUNTIME-MISMATCH"]
    assert compile_trainjob(trainjob, torch).ok


def test_torch_env_injection_target_in_the_compile() -> None:
    import yaml

    torch = yaml.safe_load(runtime("inject")).copy()
    torch["spec"]["mlPolicy"] = {"torch": {"envInjection": {"targets": [
        {"jobName": "node", "containerNames": ["missing"]}]}}}
    trainjob = yaml.safe_load(job("inject"))
    assert [d.rule for d in compile_trainjob(trainjob, torch, validate=False).diagnostics] \
        == ["TJC-TORCH-ENV-INJECTION"]
    assert [d.rule for d in compile_trainjob(trainjob, torch).diagnostics] == [
        "TJC-WEBHOOK-TORCH-ENV-INJECTION"]
    torch["spec"]["mlPolicy"]["torch"] = {}
    assert compile_trainjob(trainjob, torch).ok
