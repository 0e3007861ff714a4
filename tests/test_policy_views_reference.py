"""The one-pass `policy_input` builds what the three-view version (`tests.reference_views`)
built, key for key and in the same order (its `repr`, which the CUE memo keys on, is equal):
on JobSets compiled from a generated corpus, the built-in and generated runtimes, runtimes of
odd shapes, and hand-made JobSets of shapes a compile never gives. The plans' input
(`plan_input`) is that input with a few parts left to helpers: with what the helpers give put
back, it is the same."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from bench.corpus import corpus
from compiler.common.jsondata import Obj
from compiler.io.builtin import builtin_runtimes
from compiler.policy.views import _meta, gpus, plan_input, policy_input, quantities, trainjob_label
from tests import reference_views
from tests.test_native_plans import _jobsets, _odd_runtimes

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def _same(kind: str, obj: Any, trainjob: Any = None) -> None:
    try:
        want = repr(reference_views.policy_input(kind, obj, trainjob))
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            policy_input(kind, obj, trainjob)
        with pytest.raises(type(exc)):
            plan_input(kind, obj, trainjob)
        return
    assert repr(policy_input(kind, obj, trainjob)) == want
    assert repr(_rebuilt(plan_input(kind, obj, trainjob), trainjob)) == want


def _rebuilt(plan: Obj, trainjob: Any) -> Obj:
    """A `plan_input` with what its helpers give put back where `policy_input` has it."""
    out = dict(plan, pods=[dict(p, path=list(p["path"]), jobPath=list(p["jobPath"]))
                           for p in plan["pods"]],
               containers=[{**{k: v for k, v in c.items() if k != "pod"}, "path": list(c["path"]),
                            **quantities(c["container"]), "pod": c["pod"]}
                           for c in plan["containers"]])
    for p in out["pods"]:
        p.pop("count", None)
    if plan["kind"] == "JobSet":
        meta = _meta(trainjob or {})
        for key, value in meta["labels"].items():
            assert trainjob_label(plan, key) == value
        assert trainjob_label(plan, "no/such-label") is None
        summary = plan["summary"]
        out["trainJob"] = meta
        out["summary"] = {"numNodes": summary["numNodes"], "gpus": gpus(plan),
                          "replicatedJobs": summary["replicatedJobs"]}
    return out


def _odd_jobsets() -> list[Obj]:
    job: Obj = {"name": "node", "replicas": 2, "template": {
        "metadata": {"labels": {ANCESTOR: "trainer"}},
        "spec": {"parallelism": 3, "template": {"spec": {
            "initContainers": [{"name": "init", "image": "busybox"}, "not a container"],
            "containers": [{"name": "node", "resources": {
                "limits": {"nvidia.com/gpu": "2", "cpu": "1500m"},
                "requests": {"nvidia.com/gpu": 2, "memory": "1Gi", "x": "not a quantity"}}},
                {"name": "side", "resources": {"limits": {"amd.com/gpu": "x"}}}]}}}}}
    shapes: list[Any] = [
        {}, {"metadata": {"labels": {ANCESTOR: 5}}}, {"metadata": {"labels": ["x"]}},
        {"spec": "no"}, {"spec": {"template": []}}, {"spec": {"template": {"spec": 3}}},
        {"spec": {"parallelism": None, "template": {"spec": {"containers": "no"}}}},
    ]
    out: list[Obj] = [{"spec": {"replicatedJobs": [job, "not a job", job]}},
                      {"spec": {"replicatedJobs": "no"}}, {"spec": []}, {}]
    for template in shapes:
        out.append({"spec": {"replicatedJobs": [dict(job, template=template)]}})
    out += [{"spec": {"replicatedJobs": [dict(job, replicas=value)]}}
            for value in (None, 0, "4", "x", {"a": 1})]
    out += [{"spec": {"replicatedJobs": [dict(job, template="x")]}},
            {"spec": {"replicatedJobs": [{"name": 7}]}}]
    return out


def test_jobsets_of_a_generated_corpus() -> None:
    for jobset, trainjob in _jobsets(150):
        _same("JobSet", jobset, trainjob)


def test_runtimes_and_odd_shapes() -> None:
    runtimes = [d.data for d in builtin_runtimes()] + corpus(0)[0] + _odd_runtimes()
    for runtime in runtimes:
        _same(runtime["kind"], runtime)
        _same("JobSet", {"spec": copy.deepcopy(runtime["spec"]["template"]["spec"])},
              {"metadata": runtime["metadata"]})
    for jobset in _odd_jobsets():
        for kind in ("JobSet", "TrainingRuntime", "TrainJob"):
            _same(kind, jobset, {"metadata": {"labels": {"a": 1}, "annotations": None}})
            _same(kind, {"spec": {"template": jobset}})
