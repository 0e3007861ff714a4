"""Admission in the library: `admit`, `compile_trainjob` refusing what the cluster refuses, and
`validate_documents` for documents in memory. Expected rules are upstream's: the torch
webhook's reserved PET_* envs (pkg/runtime/framework/plugins/torch), the CRD's name rule."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import compiler
from compiler import admit, compile_trainjob, validate_documents
from compiler.common.diagnostics import Severity
from compiler.common.jsondata import Obj
from compiler.core import admission
from compiler.io.builtin import builtin_runtimes

TRAINJOB: Obj = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": {"name": "mnist", "namespace": "team-a"},
    "spec": {"runtimeRef": {"name": "torch-distributed"},
             "trainer": {"numNodes": 2, "image": "ghcr.io/acme/train:1.0"}},
}


def _torch() -> Obj:
    return next(d.data for d in builtin_runtimes()
                if d.data["metadata"]["name"] == "torch-distributed")


def _with_env(name: str) -> Obj:
    job = copy.deepcopy(TRAINJOB)
    job["spec"]["trainer"]["env"] = [{"name": name, "value": "4"}]
    return job


def _errors(found: Any) -> list[str]:
    return [d.rule for d in found if d.severity is Severity.ERROR]


def test_admit_refuses_a_reserved_env_and_accepts_a_good_job() -> None:
    assert _errors(admit(TRAINJOB, _torch())) == []
    found = admit(_with_env("PET_NNODES"), _torch())
    assert _errors(found) == ["TJC-WEBHOOK-TORCH-RESERVED-ENV"]
    assert found[-1].path == ("spec", "trainer", "env")
    assert "PET_NNODES" in found[-1].message


def test_admit_refuses_an_invalid_name_and_a_missing_runtime() -> None:
    job = copy.deepcopy(TRAINJOB)
    job["metadata"]["name"] = "Bad_Name"
    assert "TJC-CEL-NAME-FORMAT" in _errors(admit(job, _torch()))
    assert _errors(admit(TRAINJOB, None)) != []


def test_admit_fails_a_trainjob_whose_runtime_is_invalid() -> None:
    runtime = copy.deepcopy(_torch())
    runtime["spec"]["template"]["spec"]["replicatedJobs"] = "nope"
    assert "TJC-RUNTIME-INVALID" in _errors(admit(TRAINJOB, runtime))


def test_compile_admits_by_default_and_skips_on_request() -> None:
    refused = compile_trainjob(_with_env("PET_NNODES"), _torch())
    assert not refused.ok and refused.objects == ()
    assert _errors(refused.diagnostics) == ["TJC-WEBHOOK-TORCH-RESERVED-ENV"]
    assert refused.diagnostics[0].obj is not None and refused.diagnostics[0].obj.name == "mnist"
    built = compile_trainjob(_with_env("PET_NNODES"), _torch(), validate=False)
    assert built.ok and any(o["kind"] == "JobSet" for o in built.objects)
    assert compile_trainjob(TRAINJOB, _torch()).ok


def test_validate_documents_checks_documents_in_memory() -> None:
    found = validate_documents([_with_env("PET_NNODES")])
    assert _errors(found) == ["TJC-WEBHOOK-TORCH-RESERVED-ENV"]
    assert found[0].locations[0].file == "<document 0>"
    assert _errors(validate_documents([TRAINJOB])) == []
    custom = copy.deepcopy(_torch())
    custom["metadata"]["name"] = "team-torch"
    job = copy.deepcopy(TRAINJOB)
    job["spec"]["runtimeRef"]["name"] = "team-torch"
    assert _errors(validate_documents([job], [custom], builtin=False)) == []
    assert _errors(validate_documents([job], builtin=False)) != []


HALF: Obj = {"limits": {"nvidia.com/gpu": "500m"}}
ONE: Obj = {"limits": {"nvidia.com/gpu": "1"}}
PER_NODE_GPU = ("spec", "trainer", "resourcesPerNode", "limits", "nvidia.com/gpu")


def _gpu_case(per_node: Obj | None, node: Obj | None = None, *, ml_policy: bool = True,
              trainer_label: bool = True) -> tuple[Obj, Obj]:
    """torch-distributed with the node container's resources `node`, maybe without its
    mlPolicy or its trainer label; the TrainJob with resourcesPerNode `per_node`."""
    runtime = copy.deepcopy(_torch())
    if not ml_policy:
        del runtime["spec"]["mlPolicy"]
    rjob = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    if not trainer_label:
        rjob["name"], rjob["template"]["metadata"] = "work", {}
    if node is not None:
        rjob["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] = node
    job = copy.deepcopy(TRAINJOB)
    if per_node is not None:
        job["spec"]["trainer"]["resourcesPerNode"] = per_node
    return runtime, job


# Kubeflow Trainer v2.3.0 merges resourcesPerNode, per key, only into the first `node`
# container of the trainer job of a runtime with an mlPolicy (pkg/runtime/core/
# trainingruntime.go); the API server refuses a fractional GPU only in a Pod
# (ValidateResourceQuantityValue). Verdicts as the parity oracle gives them.
@pytest.mark.parametrize(("case", "where"), [
    (_gpu_case(HALF, ml_policy=False), None),  # ignored: no mlPolicy
    (_gpu_case(HALF, trainer_label=False), None),  # ignored: no trainer job
    (_gpu_case(ONE, HALF), None),  # the runtime's 500m replaced
    (_gpu_case(HALF), PER_NODE_GPU),
    (_gpu_case({"limits": {"memory": "1Gi"}}, HALF), ("spec", "runtimeRef")),  # kept
    (_gpu_case(HALF, trainer_label=False, node=HALF), ("spec", "runtimeRef")),
], ids=["no-mlpolicy", "no-trainer-job", "replaced", "merged", "runtime-kept", "runtime-only"])
def test_a_fractional_gpu_is_refused_where_it_reaches_a_pod(
        case: tuple[Obj, Obj], where: tuple[str, ...] | None) -> None:
    runtime, job = case
    result = compile_trainjob(job, runtime)
    refused = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    assert [(d.rule, d.path, d.subject) for d in refused] == \
        ([("TJC-RESOURCE-NOT-INTEGER", where, "pods")] if where else [])
    assert any(o["kind"] == "JobSet" for o in result.objects)  # the cluster takes them


def test_a_runtime_whose_pods_would_be_refused_is_still_stored() -> None:
    """The API server stores a runtime with a fractional GPU request in a sidecar (the parity
    oracle accepts it) and refuses only the Pods made from it: admission says so about the
    Pods (subject `pods`), and the TrainJob's runtime is not invalid (before, the runtime's
    admission made it `runtime`, so the library and the controller refused the TrainJob
    with TJC-RUNTIME-INVALID where validate and render did not)."""
    runtime = copy.deepcopy(_torch())
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]
    pod["containers"].append({"name": "sidecar", "image": "img:1",
                              "resources": {"requests": {"nvidia.com/gpu": "1.5"}}})
    _, found = admission.admit_runtime(runtime)
    assert [(d.rule, d.subject) for d in found if d.severity is Severity.ERROR] == \
        [("TJC-RESOURCE-NOT-INTEGER", "pods")]
    assert "TJC-RUNTIME-INVALID" not in _errors(admit(TRAINJOB, runtime))


def test_error_types_are_exported() -> None:
    assert issubclass(compiler.InputError, compiler.TjcError)
    assert issubclass(compiler.CompileError, compiler.TjcError)

