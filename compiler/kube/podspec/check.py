"""Every rule of the package on one pod spec, pod template or Job spec, in one list.

`pod_problems`, `template_problems` and `job_problems` run the rule modules on a plain spec as
the API server receives it (`Scope` says how complete it is) and give `Problem`s with paths
below what they were handed. The volumes go first: a mount may name only a volume that has no
problem of its own (`ValidateVolumes` keeps only those). Pure; called by
`compiler.kube.podspec.refusals` (admission) and `compiler.core.podrefusals` (the compile).
"""

from __future__ import annotations

from typing import Any

from compiler.kube.podspec import (
    containers,
    env,
    job,
    mounts,
    podfields,
    ports,
    probes,
    resources,
    security,
    volumefiles,
    volumes,
)
from compiler.kube.podspec.base import Problem, Scope


def pod_problems(pod: Any, scope: Scope) -> list[Problem]:
    """Every problem of one pod spec (`ValidatePodSpec`)."""
    if not isinstance(pod, dict):
        return []
    found = [Problem(volumefiles.RULE, path, message)
             for path, message in volumefiles.problems(pod)]
    found += volumes.problems(pod)
    duplicates, usable = volumes.usable(pod, found, scope)
    found += duplicates
    found += containers.problems(pod, scope)
    found += ports.problems(pod, scope)
    found += env.problems(pod, scope)
    found += resources.problems(pod, scope)
    if scope >= Scope.RUNTIME:
        found += probes.problems(pod)
    found += mounts.problems(pod, usable, scope)
    found += podfields.problems(pod, scope)
    found += security.problems(pod)
    return found


def template_problems(template: Any, scope: Scope) -> list[Problem]:
    """Every problem of a pod template (`ValidatePodTemplateSpec`): its metadata and spec."""
    if not isinstance(template, dict):
        return []
    found = list(podfields.template_problems(template))
    found += [p._replace(path=("spec", *p.path)) for p in pod_problems(template.get("spec"),
                                                                       scope)]
    return found


def job_problems(spec: Any, scope: Scope) -> list[Problem]:
    """Every problem of a replicated job's Job spec (`validateJobSpec`) and its template; the
    Job-level rules from `Scope.RUNTIME` on (a runtime patch holds only the template)."""
    if not isinstance(spec, dict):
        return []
    found = list(job.problems(spec, scope)) if scope >= Scope.RUNTIME else []
    found += [p._replace(path=("template", *p.path))
              for p in template_problems(spec.get("template"), scope)]
    return found
