"""A JobSet violation is located by the provenance its compile recorded, nothing derived
again: at the runtime exactly when the runtime's template holds the value at the violation's
path, else where `tjc explain` (`Explainer`) says the field's value came from. Checked on a
generated corpus with a share of untagged and `latest` images, GPU requests that differ from
their limits, runtime patches that add containers, runtimes with several `node` containers,
sidecars and MPI launchers; and validate compiles each TrainJob once, findings or not."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from bench.corpus import corpus
from compiler.common.diagnostics import has_errors, refused
from compiler.common.jsondata import Obj, get_at
from compiler.core.compile import compile_defaulted, compile_trainjob
from compiler.core.resolve import object_ref
from compiler.explain import explainer as explainer_module
from compiler.explain.explainer import Explainer
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Document, Source, iter_source
from compiler.pipeline import session as session_module
from compiler.policy.check import PolicyChecker, jobset_findings
from compiler.policy.engine import PolicySet
from compiler.policy.packs import Loader, pack_files
from compiler.validate.documents import prepare

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def _pods(runtime: Obj) -> list[tuple[Obj, Obj]]:
    jobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    return [(job, job["template"]["spec"]["template"]["spec"]) for job in jobs]


def _odd_runtimes(base: list[Obj]) -> list[Obj]:
    """Runtimes whose trainer job has two `node` containers, a `latest` sidecar, or a
    `node` container outside the trainer job; or (a third of them) no mlPolicy."""
    out = []
    for i, runtime in enumerate(base):
        odd = copy.deepcopy(runtime)
        odd["metadata"]["name"] = f"odd-{i}"
        if i % 3 == 0:  # no mlPolicy (resourcesPerNode is not merged), containers as they are
            odd["spec"].pop("mlPolicy", None)
            out.append(odd)
            continue
        for job, pod in _pods(odd):
            trainer = (job["template"].get("metadata") or {}).get("labels", {}).get(ANCESTOR)
            node = next((c for c in pod["containers"] if c["name"] == "node"), None)
            if trainer == "trainer" and node is not None:
                pod["containers"] += [dict(copy.deepcopy(node), image="busybox"),
                                      {"name": "sidecar", "image": "envoy:latest"}]
            elif node is None:
                pod["containers"].append({"name": "node", "image": "ubuntu:latest"})
        out.append(odd)
    return out


def _jobs(rng: random.Random, jobs: list[Obj], runtimes: list[Obj]) -> list[Obj]:
    out = []
    for i, job in enumerate(jobs):
        job = copy.deepcopy(job)
        trainer = job["spec"]["trainer"]
        roll = rng.random()
        if roll < 0.3 and "image" in trainer:
            trainer["image"] = trainer["image"].split(":")[0] + rng.choice([":latest", ""])
        elif roll < 0.4:
            trainer.pop("image", None)
        if rng.random() < 0.2:  # an extended resource whose request differs from its limit
            trainer["resourcesPerNode"] = {
                "requests": {"nvidia.com/gpu": rng.choice([1, 2]), "cpu": "1"},
                "limits": rng.choice([{}, {"nvidia.com/gpu": 4}, {"cpu": "2"}])}
        if rng.random() < 0.3:
            # a patch cannot set an image (the API server drops the field), but it can add
            # a container, here with the trainer's image and a security context
            job["spec"]["runtimePatches"] = [_patch(
                {"name": rng.choice(["node", "sidecar"]),
                 "securityContext": {"runAsNonRoot": True}})]
        if i % 5 == 0:
            odd = runtimes[i % len(runtimes)]
            job["spec"]["runtimeRef"] = {"name": odd["metadata"]["name"],
                                         "kind": odd["kind"]}
            job["metadata"]["namespace"] = odd["metadata"].get("namespace", "default")
        out.append(job)
    return out


def _patch(container: Obj) -> Obj:
    return {"manager": "example.com/x", "trainingRuntimeSpec": {"template": {"spec": {
        "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
            "containers": [container]}}}}}]}}}}


def _documents(prefix: str, docs: list[Obj]) -> list[Source]:
    return [Source(f"{prefix}{i}.yaml", json.dumps(doc, indent=2)) for i, doc in enumerate(docs)]


def _corpus() -> list[Source]:
    rng = random.Random(5)
    own, jobs = corpus(400, seed=3)
    builtin = [d.data for d in builtin_runtimes()]
    odd = _odd_runtimes([*own, *builtin])
    for runtime in odd:
        runtime["kind"] = "ClusterTrainingRuntime"
        runtime["metadata"].pop("namespace", None)
    return _documents("rt", [*own, *odd]) + _documents("job", _jobs(rng, jobs, odd))


def _checker() -> PolicyChecker:
    return PolicyChecker(PolicySet(Loader({}).load_all(pack_files([], builtin=True))))


def test_findings_are_located_as_recorded_and_as_explain_traces_them() -> None:
    sources = _corpus()
    checker = _checker()
    validator, _ = prepare(sources, list(builtin_runtimes()), policies=checker)
    at_runtime = elsewhere = 0
    for source in sources:
        for doc in iter_source(source):
            if not isinstance(doc, Document) or doc.data.get("kind") != "TrainJob":
                continue
            found, data = validator.admit(doc)
            entry = None if refused(found) else validator._entry(data)
            if entry is None:
                continue
            compiled = compile_defaulted(data, entry.get())
            if has_errors(compiled.diagnostics):
                continue
            assert compiled.origins is not None
            jobset: Any = next(o for o in compiled.objects if o.get("kind") == "JobSet")
            findings = jobset_findings(checker.policies, data, jobset, compiled.origins)
            located = checker.locate(doc, entry.doc, findings)
            explainer = Explainer(doc, entry.doc, entry.get())
            for f, d in zip(findings, located, strict=True):
                path = f.violation.path
                held = get_at(jobset, path) == get_at(entry.get().spec, path[1:])
                assert f.from_runtime == (path[0] == "spec" and held), (doc.source.name, path)
                if f.from_runtime:
                    assert d.obj == object_ref(entry.doc.data)
                    assert d.locations == (entry.doc.locate(("spec", "template", *path)),)
                    at_runtime += 1
                    continue
                entry_ = explainer.attribute(path, get_at(jobset, path))
                where = entry_.source[0].locate(entry_.source[1]) if entry_.source \
                    else doc.locate(("spec",))
                assert d.locations == (where,) and d.obj == object_ref(doc.data), path
                elsewhere += 1
    # (the corpus' TrainJobs whose Pods the API server refuses no longer compile: TJC-POD-*)
    assert at_runtime >= 40 and elsewhere >= 40, (at_runtime, elsewhere)


def test_validate_compiles_each_trainjob_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Locating a finding reads the compile's record: no second, traced compile (before, a
    finding on a field other than the trainer's image or resources compiled its TrainJob
    again to trace it)."""
    sources = _corpus()
    validator, _ = prepare(sources, list(builtin_runtimes()), policies=_checker())
    calls: list[str] = []
    real = compile_defaulted

    def counted(tj: Obj, *args: Any, **kwargs: Any) -> Any:
        calls.append(tj["metadata"]["name"])
        return real(tj, *args, **kwargs)

    monkeypatch.setattr(session_module, "compile_defaulted", counted)
    monkeypatch.setattr(explainer_module, "compile_defaulted", counted)
    policy = 0
    for source in sources:
        for doc in iter_source(source):
            if isinstance(doc, Document) and doc.data.get("kind") == "TrainJob":
                before = len(calls)
                found = validator.process(doc).diagnostics
                policy += sum(d.subject == "policy" and d.obj is not None
                              and d.obj.kind == "TrainJob" for d in found)
                assert len(calls) - before <= 1, doc.source.name
    assert policy >= 40 and len(calls) >= 300, (policy, len(calls))


def _torch_runtime(name: str, containers: list[Obj]) -> Obj:
    runtime = copy.deepcopy(next(d.data for d in builtin_runtimes()
                                 if d.data["metadata"]["name"] == "torch-distributed"))
    runtime["metadata"]["name"] = name
    _pods(runtime)[0][1]["containers"] = containers
    return runtime


def test_two_containers_of_one_name_are_located_each_at_its_own_place() -> None:
    """The runtime's second `node` container holds a `latest` image the TrainJob does not
    override: the finding is the runtime's, at that container, and `tjc explain` traces
    the field there too (before, the record mapped it to the first container of the name,
    and the finding was reported against the TrainJob). Admission refuses two containers
    of one name, so only a compile without it (the library's `validate=False`, `tjc render
    --no-validate`) meets them."""
    runtime = _torch_runtime("two-nodes", [{"name": "node", "image": "repo/train:1.0"},
                                           {"name": "node", "image": "busybox:latest"}])
    job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
           "metadata": {"name": "job", "namespace": "team"},
           "spec": {"runtimeRef": {"name": "two-nodes"}, "trainer": {"numNodes": 1}}}
    rt_doc, job_doc = (next(d for d in iter_source(source) if isinstance(d, Document))
                       for source in _documents("rt", [runtime]) + _documents("job", [job]))
    compiled = compile_trainjob(job, runtime, validate=False)
    assert compiled.ok and compiled.origins is not None, compiled.diagnostics
    jobset = next(o for o in compiled.objects if o.get("kind") == "JobSet")
    checker = _checker()
    findings = jobset_findings(checker.policies, job, jobset, compiled.origins)
    image = ("spec", "replicatedJobs", 0, "template", "spec", "template", "spec",
             "containers", 1, "image")
    inner = ("spec", "template", *image)
    located = [(d.obj.kind if d.obj else None, d.path, d.locations)
               for d in checker.locate(job_doc, rt_doc, findings)]
    assert ("ClusterTrainingRuntime", inner, (rt_doc.locate(inner),)) in located
    origin = compiled.origins.lookup(("jobset.x-k8s.io/v1alpha2 JobSet", "job", *image))
    assert origin is not None and (origin.input, origin.path) == ("runtime", inner)
