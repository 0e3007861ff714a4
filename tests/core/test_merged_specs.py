"""What runtime patches merge a runtime's spec to is remembered per runtime (`MergedSpecs`),
and a compile that finds it there gives what a compile that merges afresh gives."""

from __future__ import annotations

import json
import marshal

from bench.corpus import corpus
from compiler.common.jsondata import Obj, copy_json, value_key
from compiler.core.compile import (
    CompileResult,
    PreparedRuntime,
    compile_trainjob,
    prepare_runtime,
)
from compiler.core.resolve import RuntimeKey, runtime_key, wanted_key
from compiler.io.builtin import builtin_runtimes


def _runtimes(repo: list[Obj]) -> dict[RuntimeKey, Obj]:
    docs = [*(d.data for d in builtin_runtimes()), *repo]
    return {runtime_key(doc): doc for doc in docs}


def _patched_jobs(n: int) -> list[tuple[Obj, Obj]]:
    repo, jobs = corpus(n, seed=5)
    table = _runtimes(repo)
    out = []
    for job in jobs:
        key = wanted_key(job)
        patches = job.get("spec", {}).get("runtimePatches") or []
        if isinstance(key, RuntimeKey) and key in table and any(
                "spec" in ((p.get("trainingRuntimeSpec") or {}).get("template") or {})
                for p in patches if isinstance(p, dict)):
            out.append((job, table[key]))
    return out


def _same(a: CompileResult, b: CompileResult) -> None:
    assert a.objects == b.objects and a.diagnostics == b.diagnostics


def test_a_remembered_merge_gives_what_a_fresh_merge_gives() -> None:
    jobs = _patched_jobs(400)
    assert len(jobs) > 20
    shared: dict[int, PreparedRuntime] = {}
    hits = 0
    for job, runtime in jobs:
        prepared = shared.setdefault(id(runtime), prepare_runtime(runtime))
        remembered = len(prepared.merged._memo)
        first = compile_trainjob(job, prepared)
        hits += len(prepared.merged._memo) == remembered
        fresh = compile_trainjob(job, prepare_runtime(runtime))
        _same(first, fresh)
        for obj in first.objects:  # what a compile returns is its caller's to change
            obj.clear()
        _same(compile_trainjob(job, prepared), fresh)
    assert hits > len(jobs) // 4  # repositories repeat their patches


def test_patches_that_differ_do_not_share_an_entry() -> None:
    job, runtime = _patched_jobs(400)[0]
    prepared = prepare_runtime(runtime)
    variant = copy_json(job)
    template = variant["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]
    jobs = template["spec"].setdefault("replicatedJobs", [{"name": "node"}])
    pod = jobs[0].setdefault("template", {}).setdefault("spec", {}).setdefault(
        "template", {}).setdefault("spec", {})
    pod["nodeSelector"] = {"pool": "other-pool"}
    _same(compile_trainjob(job, prepared), compile_trainjob(job, prepare_runtime(runtime)))
    _same(compile_trainjob(variant, prepared),
          compile_trainjob(variant, prepare_runtime(runtime)))
    assert compile_trainjob(job, prepared).objects != compile_trainjob(variant, prepared).objects
    assert marshal.dumps([{"a": 1}]) != marshal.dumps([{"a": True}]) != \
        marshal.dumps([{"a": 1.0}])


def test_equal_patches_share_an_entry_however_their_parts_are_shared() -> None:
    """The memo's key is the same for equal data whatever holds references to its parts
    (`marshal`'s default format writes back-references for those, so equal patches read
    from different files missed each other)."""
    job, runtime = _patched_jobs(400)[0]
    prepared = prepare_runtime(runtime)
    first = copy_json(job)  # its strings are also the job's
    compile_trainjob(first, prepared)
    entries = len(prepared.merged._memo)
    compile_trainjob(json.loads(json.dumps(job)), prepared)  # strings of its own
    assert entries and len(prepared.merged._memo) == entries
    part = "x" * 3
    shared, single = {"a": part, "b": part}, {"a": "x" * 3, "b": "".join(["x"] * 3)}
    assert marshal.dumps(shared) != marshal.dumps(single)  # what the default format does
    assert value_key(shared) == value_key(single)
    assert value_key([{"a": 1}]) != value_key([{"a": True}]) != value_key([{"a": 1.0}])


def test_remembered_resources_are_not_shared_with_what_a_compile_returns() -> None:
    """resourcesPerNode is canonicalized once per distinct value (`_canonical_resources`);
    changing the JobSet one compile returns changes nothing for the next."""
    runtime = next(d.data for d in builtin_runtimes()
                   if d.data["metadata"]["name"] == "torch-distributed")
    job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
           "metadata": {"name": "r", "namespace": "default"},
           "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {
               "resourcesPerNode": {"limits": {"cpu": "2000m", "nvidia.com/gpu": 1},
                                    "requests": {"memory": "1024Mi"}}}}}
    prepared = prepare_runtime(runtime)

    def resources(result: CompileResult) -> Obj:
        jobset = next(o for o in result.objects if o["kind"] == "JobSet")
        node = next(j for j in jobset["spec"]["replicatedJobs"] if j["name"] == "node")
        out: Obj = node["template"]["spec"]["template"]["spec"]["containers"][0]["resources"]
        return out

    first = resources(compile_trainjob(job, prepared))
    assert first == {"limits": {"cpu": "2", "nvidia.com/gpu": "1"},
                     "requests": {"memory": "1Gi"}}
    first["limits"]["cpu"] = "changed"
    first["requests"].clear()
    assert resources(compile_trainjob(copy_json(job), prepared)) == {
        "limits": {"cpu": "2", "nvidia.com/gpu": "1"}, "requests": {"memory": "1Gi"}}
