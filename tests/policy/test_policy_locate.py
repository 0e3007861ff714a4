"""A JobSet violation at a trainer `node` container's image or resource, which the
TrainJob's `spec.trainer.image` or `resourcesPerNode` wrote, is located at that field without
tracing a compile (`check._trainer_image`, `check._trainer_resource`): here the same findings
are located both ways, the shortcut and the traced compile `tjc explain` runs (`Explainer`),
and must give the same diagnostics, on a generated corpus with a share of untagged and
`latest` images, GPU requests that differ from their limits, runtime patches that add
containers, runtimes with several `node` containers, sidecars and MPI launchers."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from bench.corpus import corpus
from compiler.common.diagnostics import has_errors
from compiler.common.jsondata import Obj
from compiler.core.compile import compile_defaulted
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Document, Source, iter_source
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


def test_the_shortcut_locates_as_the_traced_compile() -> None:
    rng = random.Random(5)
    own, jobs = corpus(400, seed=3)
    builtin = [d.data for d in builtin_runtimes()]
    odd = _odd_runtimes([*own, *builtin])
    for runtime in odd:
        runtime["kind"] = "ClusterTrainingRuntime"
        runtime["metadata"].pop("namespace", None)
    sources = _documents("rt", [*own, *odd]) + _documents("job", _jobs(rng, jobs, odd))
    packs = Loader({}).load_all(pack_files([], builtin=True))
    checker = PolicyChecker(PolicySet(packs))
    validator, _ = prepare(sources, list(builtin_runtimes()), policies=checker)
    shortcut = traced = 0
    for source in sources:
        for doc in iter_source(source):
            if not isinstance(doc, Document) or doc.data.get("kind") != "TrainJob":
                continue
            found, data = validator.check_trainjob(doc)
            entry = validator._entry(found, data)
            if entry is None:
                continue
            compiled = compile_defaulted(data, entry.get())
            if has_errors(compiled.diagnostics):
                continue
            jobset: Any = next(o for o in compiled.objects if o.get("kind") == "JobSet")
            findings = jobset_findings(checker.policies, data, entry.get(), jobset)
            plain = [f._replace(traced=None) for f in findings]
            want = checker.locate(doc, entry.doc, plain, entry.get())
            assert checker.locate(doc, entry.doc, findings, entry.get()) == want
            shortcut += sum(f.traced is not None for f in findings)
            traced += sum(not f.from_runtime and f.traced is None for f in findings)
    # (the corpus' TrainJobs whose Pods the API server refuses no longer compile: TJC-POD-*)
    assert shortcut >= 40 and traced >= 1, (shortcut, traced)
