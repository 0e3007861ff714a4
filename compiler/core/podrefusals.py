"""What the API server would refuse of the Jobs and Pods of a compiled JobSet.

Admission checks the runtime's templates and the TrainJob's patches where they are written
(`compiler.kube.podspec.refusals`); what only the composition shows is checked here, on the
JobSet the compile made (the runtime template, the patches, the TrainJob's trainer fields and
the plugins' additions together): an image missing when the TrainJob gives none, requests above
limits once `resourcesPerNode` replaced the trainer's resources, a mount of a volume no one
added, an Indexed Job without completions. Every rule of `compiler.kube.podspec.check` runs
(`Scope.PODS`). Each error is about the TrainJob, at the field that set the value where one
did (`spec.trainer.image`, `resourcesPerNode`, `env`, `numNodes`), else at `spec.runtimeRef`
(the runtime and the patches), its message naming the JobSet field.

Amounts below 0 and fractional extended resources (`TJC-RESOURCE-*`, subject `pods`: the
objects are kept) are `compiler.kube.podresources`' where they are written, but for those a
TrainJob's resourcesPerNode sets or may replace: they reach a Pod only where upstream merges
resourcesPerNode (a runtime with an mlPolicy, its trainer job's first `node` container), so
they are judged here, in the container they end in (`context.may_take_resources`; admission
leaves them out). Called by the compile for every JobSet it makes, like
`compiler.core.limits`; pure.
"""

from __future__ import annotations

from typing import Any

from compiler.common.diagnostics import Diagnostic, Path, error, format_path
from compiler.common.jsondata import Obj, get_path
from compiler.core.context import (
    ANCESTOR_LABEL,
    NODE,
    TRAINER,
    may_take_resources,
    takes_resources,
)
from compiler.core.release import DEFAULT as DEFAULT_RELEASE
from compiler.core.release import Release
from compiler.kube.podresources import amount_problem
from compiler.kube.podspec.base import Problem, Scope, dicts
from compiler.kube.podspec.check import job_problems
from compiler.kube.podspec.refusals import kept

_CONTAINER: Path = ("template", "spec", "containers")
_TRAINER_FIELDS = {"image": "image", "resources": "resourcesPerNode"}


def check(objects: list[Obj], trainjob: Obj, ml_policy: Obj | None = None,
          release: Release = DEFAULT_RELEASE) -> list[Diagnostic]:
    """Every error the API server would give the Jobs and Pods of the compiled JobSet
    (`ml_policy`: the runtime's; `release`: whose resourcesPerNode rule made it)."""
    out: list[Diagnostic] = []
    for obj in objects:
        if obj.get("kind") != "JobSet":
            continue
        claims = _claim_volumes(obj)
        for _, rjob in dicts(get_path(obj, "spec", "replicatedJobs")):
            spec = _with_claims(get_path(rjob, "template", "spec"), claims)
            for problem in job_problems(spec, Scope.PODS):
                if kept(problem):
                    out.append(_error(problem, rjob, spec, trainjob))
                elif _per_node(problem.path, spec, ml_policy, release):
                    out.append(_amount(problem, rjob, trainjob, ml_policy, release))
    return out


def _per_node(path: Path, spec: Any, ml_policy: Obj | None, release: Release) -> bool:
    """Whether an amount is in the container a TrainJob's resourcesPerNode may land in."""
    return len(path) == 7 and path[:3] == _CONTAINER and path[4] == "resources" and \
        may_take_resources(ml_policy, get_path(spec, "template", "spec"), path[3], release)


def _amount(problem: Problem, rjob: Obj, trainjob: Obj, ml_policy: Obj | None,
            release: Release) -> Diagnostic:
    """A refused amount of the `node` container: at resourcesPerNode when it set the amount
    (with the amount as written there), else at `spec.runtimeRef` (the runtime's)."""
    group, name = problem.path[5], problem.path[6]
    at: Path = ("spec", "trainer", "resourcesPerNode", group, name)
    written = get_path(trainjob, *at)
    labels = get_path(rjob, "template", "metadata", "labels")
    ancestor = labels.get(ANCESTOR_LABEL) if isinstance(labels, dict) else None
    if written is not None and takes_resources(rjob, ancestor, ml_policy, release):
        found = amount_problem(str(name), written) if isinstance(written, (str, int)) and \
            not isinstance(written, bool) else None
        return error(problem.rule, found[1] if found else problem.message, at, subject="pods")
    message = f"replicated job {rjob.get('name')!r}, {format_path(problem.path)}: " \
        f"{problem.message}"
    return error(problem.rule, message, ("spec", "runtimeRef"), subject="pods")


def _claim_volumes(jobset: Obj) -> list[tuple[str, str]]:
    """(volume name, claim name) of each of the JobSet's volumeClaimPolicies templates
    (JobSet v0.12 `GeneratePVCName`: `<template>-<jobset>`)."""
    name = str(get_path(jobset, "metadata", "name") or "")
    out = []
    for _, policy in dicts(get_path(jobset, "spec", "volumeClaimPolicies")):
        for _, template in dicts(policy.get("templates")):
            claim = str(get_path(template, "metadata", "name") or "")
            out.append((claim, f"{claim}-{name}"))
    return out


def _with_claims(spec: Any, claims: list[tuple[str, str]]) -> Any:
    """The Job spec as JobSet's controller makes it (`addVolumes`): a PVC volume appended for
    every claim template a container or init container mounts (beside any volume of that
    name: the Job is then refused for the duplicate)."""
    pod = get_path(spec, "template", "spec")
    if not claims or not isinstance(pod, dict):
        return spec
    mounted = {m.get("name") for key in ("containers", "initContainers")
               for _, c in dicts(pod.get(key)) for _, m in dicts(c.get("volumeMounts"))}
    added = [{"name": claim, "persistentVolumeClaim": {"claimName": pvc}}
             for claim, pvc in claims if claim in mounted]
    if not added:
        return spec
    volumes: list[Any] = pod["volumes"] if isinstance(pod.get("volumes"), list) else []
    template = {**spec["template"], "spec": {**pod, "volumes": [*volumes, *added]}}
    return {**spec, "template": template}


def _error(problem: Problem, rjob: Obj, spec: Obj, trainjob: Obj) -> Diagnostic:
    name = rjob.get("name")
    what = "Pods" if problem.pod_only else "Jobs"
    message = (f"replicated job {name!r}, {format_path(problem.path)}: {problem.message}; the "
               f"API server would refuse its {what}, so the TrainJob would never run")
    return error(problem.rule, message, _where(problem.path, rjob, spec, trainjob))


def _where(path: Path, rjob: Obj, spec: Obj, trainjob: Obj) -> Path:
    """The TrainJob field that set the refused value, else `spec.runtimeRef`."""
    trainer = get_path(trainjob, "spec", "trainer")
    trainer = trainer if isinstance(trainer, dict) else {}
    if path[:1] in (("parallelism",), ("completions",)) and _is_trainer(rjob):
        return ("spec", "trainer", "numNodes")
    if path[:3] != _CONTAINER or len(path) < 5 or not _is_trainer(rjob):
        return ("spec", "runtimeRef")
    container = get_path(spec, *path[:4])
    if not isinstance(container, dict) or container.get("name") != NODE:
        return ("spec", "runtimeRef")
    field = _TRAINER_FIELDS.get(str(path[4]))
    if field is not None and field in trainer:
        return ("spec", "trainer", field)
    if path[4] == "env" and len(path) > 5:
        return _env(path[5], container, trainer)
    return ("spec", "runtimeRef")


def _env(index: Any, container: Obj, trainer: Obj) -> Path:
    var = get_path(container, "env", index)
    name = var.get("name") if isinstance(var, dict) else None
    for i, mine in dicts(trainer.get("env")):
        if mine.get("name") == name:
            return ("spec", "trainer", "env", i)
    return ("spec", "runtimeRef")


def _is_trainer(rjob: Obj) -> bool:
    labels = get_path(rjob, "template", "metadata", "labels")
    return rjob.get("name") == NODE or (isinstance(labels, dict)
                                        and labels.get(ANCESTOR_LABEL) == TRAINER)
