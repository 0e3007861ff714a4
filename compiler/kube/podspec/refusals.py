"""Admission's pod checks: the problems of every pod template a runtime or a TrainJob's
runtime patches hold, as errors at their field paths.

The CRDs take such a template, and so does JobSet; the API server refuses the Jobs or Pods
made from it later, so the TrainJob would hang: tjc refuses it at once. A runtime's templates
are checked at `Scope.RUNTIME`, a patch's at `Scope.PATCH` (what the TrainJob and the plugins
complete is checked on the compiled JobSet, `compiler.core.podrefusals`). Amounts below 0 and
fractional extended resources are left to `compiler.kube.podresources`, which reports them
where they are written (but those resourcesPerNode sets or may replace:
`compiler.core.admission.pod_amounts`). Admission calls `refusals` (validate, render, krm,
the controller and the library alike); pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.common.diagnostics import Diagnostic, Path, error
from compiler.kube.podspec.base import Problem, Scope, dicts
from compiler.kube.podspec.check import job_problems

AMOUNT_RULES = ("TJC-RESOURCE-NEGATIVE", "TJC-RESOURCE-NOT-INTEGER")
_JOB: Path = ("template", "spec")


def refusals(kind: str, doc: Any) -> list[Diagnostic]:
    """Every pod-template error of a runtime (`TrainingRuntime`, `ClusterTrainingRuntime`) or a
    TrainJob's runtime patches."""
    subject = "trainjob" if kind == "TrainJob" else "runtime"
    out: list[Diagnostic] = []
    for at, spec, scope in _job_specs(kind, doc):
        out += [error(p.rule, p.message, (*at, *p.path), subject=subject)
                for p in job_problems(spec, scope) if kept(p)]
    return out


def kept(problem: Problem) -> bool:
    """Whether a problem is reported here (amounts are `podresources`')."""
    return problem.rule not in AMOUNT_RULES


def _job_specs(kind: str, doc: Any) -> Iterator[tuple[Path, Any, Scope]]:
    spec = doc.get("spec") if isinstance(doc, dict) else None
    if not isinstance(spec, dict):
        return
    if kind == "TrainJob":
        for i, patch in dicts(spec.get("runtimePatches")):
            jobset = _get(patch, ("trainingRuntimeSpec", "template", "spec"))
            yield from _jobs(jobset, ("spec", "runtimePatches", i, "trainingRuntimeSpec",
                                      "template", "spec"), Scope.PATCH)
    else:
        yield from _jobs(_get(spec, ("template", "spec")), ("spec", "template", "spec"),
                         Scope.RUNTIME)


def _jobs(jobset: Any, at: Path, scope: Scope) -> Iterator[tuple[Path, Any, Scope]]:
    if not isinstance(jobset, dict):
        return
    for j, rjob in dicts(jobset.get("replicatedJobs")):
        job_spec = _get(rjob, _JOB)
        if isinstance(job_spec, dict):
            yield (*at, "replicatedJobs", j, *_JOB), job_spec, scope


def _get(value: Any, path: Path) -> Any:
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value
