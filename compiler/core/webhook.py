"""Upstream's semantic admission rules (reference §5.3): the TrainJob validator, the plugins'
`Validate` functions it runs, and the TrainingRuntime/ClusterTrainingRuntime validators.

`validate_trainjob(trainjob, runtime, old=...)` and `validate_runtime(runtime, old=...)` take
documents after `compiler.kube.structural.sanitize` and `compiler.kube.defaults.default_in_place`
and return diagnostics: errors for what the webhooks reject, warnings for deprecated runtimes.
Called by `compiler.validate.documents` (`tjc validate`, and `tjc render` before it compiles). Pure:
it reads no cluster, file or clock, and never mutates its arguments.

As upstream (`ValidateObjects`), the TrainJob rules see the runtime through the compile context
(`compiler.core.context.build_context`: the JobSet template after `runtimePatches`, one pod set per
replicatedJob) without running any plugin, so counts and framework envs are not applied.
That context is built only where a rule needs more than names: whether the patches merge,
the job names after them, and (when no patch has a spec) the runtime's typed template are
worked out without it (`compiler.core.plugins.checks.Admission`), and a plugin whose policy
the runtime does not set is not run (its rules need that policy).
The deprecation warning comes first; then each plugin's own rules (its `CustomValidation`
hook, in the plugin's module: upstream's plugin `Validate`) in registry order (upstream's is
random);
then the JobSet rules held here (initializers and runtime patches), which need no framework.
This module imports no plugin module, only the registry.

Where this differs from upstream, on purpose:
- Field paths are upstream's, except where upstream reports one offending item at its list or
  at a path without the item's index (`spec.runtimePatches`, `spec.runtimePatches.manager`):
  the path then names the item, so upstream's path is always a prefix of ours. Upstream's
  ClusterTrainingRuntime not-found path `spec.RuntimeRef` (capital R) is `spec.runtimeRef` here.
  Volcano's `spec.annotations[...]` and Flux's `spec.trainer.initContainers` name no field of a
  TrainJob; those diagnostics point where the value comes from (a runtime patch or the runtime).
- Upstream checks patch job and container names against the spec after the patches are merged,
  where the merge has already added them, so in a live cluster those checks never fire and the
  patch yields a job or container without an image that fails only when the JobSet's Jobs are
  created. Here they are checked against the runtime's own template, as their messages say.
- Checks that need a live cluster are skipped: on update, whether the JobSet's replicated jobs
  are still active (`RuntimePatches cannot be modified when the JobSet's ReplicatedJob ... is
  still active`), and whether a Volcano `priorityClassName` names an existing PriorityClass.
- A runtime labelled `trainer.kubeflow.org/webhook-validation: disabled` is not checked, as the
  webhook's objectSelector skips it; a TrainingRuntime update is not checked (upstream's
  ValidateUpdate returns nothing). TrainJob rules always run (their webhook has no selector).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from compiler.common.diagnostics import Diagnostic, Path, Severity, error
from compiler.common.jsondata import Obj, get_path
from compiler.common.perobject import per_object
from compiler.common.records import dataclass
from compiler.core.context import ANCESTOR_LABEL, NODE
from compiler.core.plugins import hooked
from compiler.core.plugins.checks import (
    PATCH_JOBS,
    PATCHES,
    POD_SPEC,
    RUNTIME_JOBS,
    RUNTIME_REF,
    Admission,
    as_dict,
    as_list,
    patch_jobs,
    runtime_policy,
)
from compiler.core.plugins.checks import go_quote as _q
from compiler.core.plugins.hooks import CustomValidation
from compiler.core.release import DEFAULT as DEFAULT_RELEASE
from compiler.core.release import Release
from compiler.core.resolve import wanted_key
from compiler.kube.defaults import canonicalize_quantities, default_in_place, quantity_tree
from compiler.kube.structural import sanitize

SUPPORT_LABEL = "trainer.kubeflow.org/support"
WEBHOOK_VALIDATION_LABEL = "trainer.kubeflow.org/webhook-validation"
DEPRECATION_POLICY_URL = ("https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html"
                          "#runtime-deprecation-policy")
DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
INITIALIZER_VOLUME = "initializer"
# the container an ancestor's job must hold (`validateReplicatedJobs`)
ANCESTOR_CONTAINERS = {"trainer": NODE, MODEL_INITIALIZER: MODEL_INITIALIZER,
                       DATASET_INITIALIZER: DATASET_INITIALIZER}
PATCH_ENV_CONTAINERS = frozenset({DATASET_INITIALIZER, MODEL_INITIALIZER, NODE})

Validate = Callable[[Admission], Iterable[Diagnostic]]

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + "(\\." + _DNS1123_LABEL + ")*"
_HTTP_PATH = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"
_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN)
_PATH = re.compile(_HTTP_PATH)
_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    f"for validation is '{_DNS1123_SUBDOMAIN}')")



# ----------------------------------------------------------------------------- entry points


def validate_trainjob(trainjob: Obj, runtime: Obj | None, *, old: Obj | None = None,
                      release: Release = DEFAULT_RELEASE) -> list[Diagnostic]:
    """Upstream's TrainJob admission checks (of the Kubeflow Trainer `release`) against the
    runtime it references (None when no document or built-in provides it), with `old` the
    previous version on an update."""
    if runtime is None:
        return [_not_found(trainjob)]
    found: list[Diagnostic] = []
    facts = _runtime_facts(runtime, release)
    if facts.deprecated is not None:
        found.append(facts.deprecated)
    job = Admission(trainjob, runtime, release=release)
    if job.patches:
        problem = job.merge_problem()  # only patches can keep the context from being built
        if problem is not None:
            found.append(problem)
    for validate in facts.validators:
        found.extend(validate(job))
    found.extend(_jobset(job))
    if old is not None and release.patch_merge == "overrides":
        found.extend(_overrides_immutable(job, old))
    elif old is not None:
        found.extend(_patches_immutable(job, old))
    return found


def validate_runtime(runtime: Obj, *, old: Obj | None = None,
                     release: Release = DEFAULT_RELEASE) -> list[Diagnostic]:
    """Upstream's TrainingRuntime/ClusterTrainingRuntime admission checks (`old`: the previous
    version on an update); the webhook's objectSelector skips a runtime labelled
    `webhook-validation: disabled` from v2.3 (`Release.runtime_webhook_selector`)."""
    labels = as_dict(as_dict(runtime.get("metadata")).get("labels"))
    if labels.get(WEBHOOK_VALIDATION_LABEL) == "disabled" and release.runtime_webhook_selector:
        return []
    kind = runtime.get("kind")
    if kind == "TrainingRuntime" and old is not None:
        return []
    found: list[Diagnostic] = []
    if kind == "ClusterTrainingRuntime" and old is None and _is_deprecated(runtime):
        name = as_dict(runtime.get("metadata")).get("name", "")
        found.append(Diagnostic(
            Severity.WARNING, "TJC-WEBHOOK-DEPRECATED-RUNTIME",
            f'ClusterTrainingRuntime "{name}" is deprecated and will be removed in a future '
            f"release of Kubeflow Trainer. See runtime deprecation policy: "
            f"{DEPRECATION_POLICY_URL}", ("metadata", "labels", SUPPORT_LABEL),
            subject="runtime"))
    found.extend(_replicated_jobs(runtime))
    return found


# ----------------------------------------------------------------------------- per runtime


_POLICY = re.compile(r"(mlPolicy|podGroupPolicy)\.(\w+)")


@dataclass(frozen=True)
class RuntimeFacts:
    """What the rules read of a runtime alone: the plugins' `validate` functions to run, in
    registry order (a plugin whose policy, `mlPolicy.<key>` or `podGroupPolicy.<key>`, the
    runtime does not set yields nothing: its `validate` returns first thing without it),
    the container names per job of the runtime's template, and the deprecation warning for
    a TrainJob that references it (a Diagnostic is immutable)."""

    validators: list[Validate]
    names: dict[str, set[str]]
    deprecated: Diagnostic | None


@per_object
def _runtime_facts(runtime: Obj, release: Release) -> RuntimeFacts:
    """The facts of a runtime, worked out once per runtime object and release (callers
    validate many TrainJobs against one, and never change it); only the plugins the release
    registers validate."""
    validators: list[Validate] = [hook.validate for plugin, hook in hooked(CustomValidation)
                                  if release.has_plugin(plugin.name)
                                  and _policy_set(runtime, plugin.policy)]
    names = _container_names(as_dict(get_path(runtime, "spec", "template", "spec")))
    return RuntimeFacts(validators, names, _deprecated_reference(runtime))


def _policy_set(runtime: Obj, policy: str) -> bool:
    match = _POLICY.fullmatch(policy)
    return match is None or runtime_policy(runtime, match[1], match[2]) is not None


# ----------------------------------------------------------------------------- runtime lookup


def _not_found(trainjob: Obj) -> Diagnostic:
    """`ValidateObjects` when the GET of the runtime fails (or the runtime kind is unknown)."""
    key = wanted_key(trainjob)
    if isinstance(key, Diagnostic):
        return key
    if key.kind == "TrainingRuntime":
        resource, variant = "trainingruntimes", "trainingRuntime"
    else:
        resource, variant = "clustertrainingruntimes", "clusterTrainingRuntime"
    return error("TJC-WEBHOOK-RUNTIME-NOT-FOUND",
                 f'{resource}.trainer.kubeflow.org "{key.name}" not found: specified {variant} '
                 "must be created before the TrainJob is created", RUNTIME_REF)


def _is_deprecated(runtime: Obj) -> bool:
    """`IsSupportDeprecated`: the support label is exactly `deprecated`."""
    labels = as_dict(as_dict(runtime.get("metadata")).get("labels"))
    return labels.get(SUPPORT_LABEL) == "deprecated"


def _deprecated_reference(runtime: Obj) -> Diagnostic | None:
    """The warning for a TrainJob using a deprecated ClusterTrainingRuntime (upstream gives
    none for a namespaced TrainingRuntime)."""
    if runtime.get("kind") != "ClusterTrainingRuntime" or not _is_deprecated(runtime):
        return None
    name = as_dict(runtime.get("metadata")).get("name", "")
    return Diagnostic(
        Severity.WARNING, "TJC-WEBHOOK-DEPRECATED-RUNTIME-REF",
        f'referenced ClusterTrainingRuntime "{name}" is deprecated and will be removed in a '
        f"future release of Kubeflow Trainer. See runtime deprecation policy: "
        f"{DEPRECATION_POLICY_URL}", RUNTIME_REF)


# ----------------------------------------------------------------------------- jobset


def _jobset(job: Admission) -> Iterator[Diagnostic]:
    """JobSet `Validate`: initializer jobs (by job name), runtime patches."""
    initializer = as_dict(job.spec.get("initializer"))
    if (isinstance(initializer.get("dataset"), dict)
            or isinstance(initializer.get("model"), dict)) \
            and (spec := job.template_spec()) is not None:
        names = _container_names(spec)
        for key, name, config in (("dataset", DATASET_INITIALIZER, "datasetConfig"),
                                  ("model", MODEL_INITIALIZER, "modelConfig")):
            if isinstance(initializer.get(key), dict):
                yield from _initializer(spec, names, name, config,
                                        job.release.initializer_mount_check)
    yield from _overrides(job) if job.release.patch_merge == "overrides" else _patches(job)


def _container_names(spec: Obj) -> dict[str, set[str]]:
    """Container and init container names per replicatedJob name."""
    out: dict[str, set[str]] = {}
    for rjob in as_list(spec.get("replicatedJobs")):
        pod = as_dict(get_path(rjob, *POD_SPEC))
        out[str(rjob.get("name", ""))] = {
            str(c.get("name")) for key in ("initContainers", "containers")
            for c in as_list(pod.get(key))}
    return out


def _initializer(spec: Obj, names: dict[str, set[str]], name: str, config: str,
                 mount: bool = True) -> Iterator[Diagnostic]:
    """The job named `name`, its container `name`, and (from v2.3: `mount`,
    `Release.initializer_mount_check`) that container's `initializer` mount."""
    if name not in names:
        yield error("TJC-WEBHOOK-INITIALIZER-JOB",
                    f"must have {name} job when trainJob is configured with input {config}",
                    RUNTIME_REF)
    elif name not in names[name]:
        yield error("TJC-WEBHOOK-INITIALIZER-CONTAINER",
                    f"must have container with name - {name} in the {name} job", RUNTIME_REF)
    elif mount and not _has_initializer_mount(spec, name):
        yield error("TJC-WEBHOOK-INITIALIZER-MOUNT",
                    f"must have volumeMount with name - {INITIALIZER_VOLUME} in container "
                    f"{name} of the {name} job", RUNTIME_REF)


def _has_initializer_mount(spec: Obj, name: str) -> bool:
    for rjob in as_list(spec.get("replicatedJobs")):
        if rjob.get("name") != name:
            continue
        for container in as_list(get_path(rjob, *POD_SPEC, "containers")):
            if container.get("name") == name and any(
                    m.get("name") == INITIALIZER_VOLUME for m in as_list(
                        container.get("volumeMounts"))):
                return True
    return False


def _patches(job: Admission) -> Iterator[Diagnostic]:
    """Patch managers, and the jobs and containers patches name (against the runtime's own
    template; see the module docstring)."""
    if not job.spec.get("runtimePatches"):
        return  # no patch, no patch job: nothing below would be looked at
    names = _runtime_facts(job.runtime, job.release).names
    for i, patch in enumerate(as_list(job.spec.get("runtimePatches"))):
        yield from _manager(str(patch.get("manager", "")), (*PATCHES, i, "manager"))
    for i, j, pjob in patch_jobs(job.trainjob):
        path: Path = (*PATCHES, i, *PATCH_JOBS, j)
        rjob_name = str(pjob.get("name", ""))
        containers = names.get(rjob_name)
        pod = get_path(pjob, *POD_SPEC)
        if containers is None and job.release.patch_merge == "jobs":
            # v2.2 merges job patches into the runtime's jobs only: none is added
            yield error("TJC-WEBHOOK-PATCH-JOB", "must not have replicated job that doesn't "
                        "exist in the runtime job template", (*path, "name"))
            continue
        if containers is None:
            yield _new_in_patch("TJC-QUIRK-PATCH-NEW-JOB", f"replicated job {_q(rjob_name)}",
                                "the runtime job template", (*path, "name"))
            # after the merge the new job holds exactly the patch's containers
            containers = {str(c.get("name", "")) for key in ("initContainers", "containers")
                          for c in as_list(as_dict(pod).get(key))}
        if isinstance(pod, dict):
            yield from _patch_containers(pod, containers, rjob_name, (*path, *POD_SPEC))


def _new_in_patch(rule: str, what: str, where: str, path: Path) -> Diagnostic:
    """A patch naming something the runtime does not have. Upstream's webhook means to reject
    it, but checks the template after the patches are merged in, where the name exists: the
    cluster accepts the TrainJob and the JobSet gets a job or container with only what the
    patch gives it (no image)."""
    return Diagnostic(Severity.WARNING, rule, f"{what} is not in {where}; upstream checks the "
                      "template after merging the patches, so the cluster accepts this and the "
                      "patch adds it with no image; name one that exists", path)


def _patch_containers(pod: Obj, containers: set[str], rjob_name: str,
                      path: Path) -> Iterator[Diagnostic]:
    for k, container in enumerate(as_list(pod.get("initContainers"))):
        name = str(container.get("name", ""))
        if name not in containers:
            yield _new_in_patch("TJC-QUIRK-PATCH-NEW-INIT-CONTAINER", f"initContainer {_q(name)}",
                                f"the runtime job {rjob_name}", (*path, "initContainers", k))
    for k, container in enumerate(as_list(pod.get("containers"))):
        name = str(container.get("name", ""))
        if name not in containers:
            yield _new_in_patch("TJC-QUIRK-PATCH-NEW-CONTAINER", f"container {_q(name)}",
                                f"the runtime job {rjob_name}", (*path, "containers", k))
        if container.get("env") and name in PATCH_ENV_CONTAINERS:
            yield error("TJC-WEBHOOK-PATCH-ENV",
                        f"must not have envs for the {DATASET_INITIALIZER}, {MODEL_INITIALIZER}, "
                        f"{NODE} containers; set them in spec.trainer.env or "
                        "spec.initializer instead", (*path, "containers", k, "env"))


def _manager(value: str, path: Path) -> Iterator[Diagnostic]:
    """`IsDomainPrefixedPath`: `<DNS-1123 subdomain>/<HTTP path>`."""
    rule = "TJC-WEBHOOK-PATCH-MANAGER"
    if not value:
        yield error(rule, "required value", path)
        return
    host, sep, rest = value.partition("/")
    if not sep or not host or not rest:
        yield error(rule, f"invalid value {_q(value)}: must be a domain-prefixed path (such as "
                    '"acme.io/foo")', path)
        return
    if len(host) > 253:
        yield error(rule, f"invalid value {_q(host)}: must be no more than 253 characters", path)
    if not _SUBDOMAIN.fullmatch(host):
        yield error(rule, f"invalid value {_q(host)}: {_SUBDOMAIN_MESSAGE}", path)
    if not _PATH.fullmatch(rest):
        yield error(rule, f"invalid value {_q(rest)}: invalid path (regex used for validation "
                    f"is '{_HTTP_PATH}')", path)


OVERRIDES: Path = ("spec", "podTemplateOverrides")


def _overrides(job: Admission) -> Iterator[Diagnostic]:
    """v2.1's JobSet `Validate` of `spec.podTemplateOverrides`: each target job exists in the
    runtime, and its override gives no env to the node and initializer containers (an
    override container the job lacks is merged in, as a runtime patch's is)."""
    overrides = as_list(job.spec.get("podTemplateOverrides"))
    if not overrides:
        return
    names = _runtime_facts(job.runtime, job.release).names
    for i, override in enumerate(overrides):
        spec = as_dict(override.get("spec"))
        for j, target in enumerate(as_list(override.get("targetJobs"))):
            if str(target.get("name", "")) not in names:
                yield error("TJC-WEBHOOK-OVERRIDE-JOB", "must not have targetJob that doesn't "
                            "exist in the runtime job template",
                            (*OVERRIDES, i, "targetJobs", j, "name"))
        for k, container in enumerate(as_list(spec.get("containers"))):
            if container.get("env") and container.get("name") in PATCH_ENV_CONTAINERS:
                yield error("TJC-WEBHOOK-OVERRIDE-ENV",
                            f"must not have envs for the {DATASET_INITIALIZER}, "
                            f"{MODEL_INITIALIZER}, {NODE} containers; set them in "
                            "spec.trainer.env or spec.initializer instead",
                            (*OVERRIDES, i, "spec", "containers", k, "env"))


def _overrides_immutable(job: Admission, old: Obj) -> Iterator[Diagnostic]:
    """v2.1, on update: podTemplateOverrides change only when the TrainJob is suspended
    after the update (the active-JobSet check needs a cluster and is skipped)."""
    version = job.release.version
    old_doc = default_in_place("TrainJob", sanitize("TrainJob", old, subject="trainjob",
                                                    release=version)[0], version)
    old_spec = as_dict(old_doc.get("spec"))
    if _prune(old_spec.get("podTemplateOverrides")) == _prune(
            job.spec.get("podTemplateOverrides")):
        return
    before = job.release.patch_change_suspended_before  # (False: v2.1 asks after only)
    if not ((before and old_spec.get("suspend") is True) or job.spec.get("suspend") is True):
        yield error("TJC-WEBHOOK-OVERRIDE-IMMUTABLE", "podTemplateOverrides can only be "
                    "modified when the TrainJob is suspended", OVERRIDES)


def _patches_immutable(job: Admission, old: Obj) -> Iterator[Diagnostic]:
    """On update: runtimePatches may change only when the TrainJob is suspended after the
    update, or (from v2.2.1: `Release.patch_change_suspended_before`) before it (patch
    `time` ignored: the defaulter restores it for unchanged patches). The active-JobSet check
    that follows upstream needs a cluster and is skipped."""
    version = job.release.version
    old_doc = default_in_place("TrainJob", sanitize("TrainJob", old, subject="trainjob",
                                                    release=version)[0], version)
    old_spec = as_dict(old_doc.get("spec"))
    if _comparable_patches(old_spec, version) == _comparable_patches(job.spec, version):
        return
    before = job.release.patch_change_suspended_before
    if (before and old_spec.get("suspend") is True) or job.spec.get("suspend") is True:
        return
    yield error("TJC-WEBHOOK-PATCH-IMMUTABLE",
                "runtimePatches can only be modified when the TrainJob is suspended" +
                (" before or after the update" if before else ""), PATCHES)


def _comparable_patches(spec: Obj, version: str) -> Any:
    """The patches as `equality.Semantic` compares them: without `time`, with nulls and empty
    lists/maps dropped and quantities canonical."""
    patches = [{k: v for k, v in p.items() if k != "time"}
               for p in as_list(spec.get("runtimePatches"))]
    canonicalize_quantities(patches, as_dict(quantity_tree("TrainJob", "spec", "runtimePatches",
                                                           release=version)))
    return _prune(patches)


def _prune(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


# ----------------------------------------------------------------------------- runtime


def _replicated_jobs(runtime: Obj) -> Iterator[Diagnostic]:
    """`validateReplicatedJobs`: jobs of a known ancestor have one replica and their container."""
    for i, rjob in enumerate(as_list(get_path(runtime, *RUNTIME_JOBS))):
        labels = get_path(rjob, "template", "metadata", "labels")
        ancestor = labels.get(ANCESTOR_LABEL) if isinstance(labels, dict) else None
        if ancestor not in ANCESTOR_CONTAINERS:
            continue
        path: Path = (*RUNTIME_JOBS, i)
        replicas = rjob.get("replicas", 1)
        if replicas != 1:
            yield error("TJC-WEBHOOK-RUNTIME-REPLICAS",
                        f"replicas is {replicas}: always must be 1", (*path, "replicas"),
                        subject="runtime")
        wanted = ANCESTOR_CONTAINERS[ancestor]
        containers = as_list(get_path(rjob, *POD_SPEC, "containers"))
        if not any(c.get("name") == wanted for c in containers):
            yield error("TJC-WEBHOOK-RUNTIME-CONTAINER",
                        f"must contain the required container for the ancestor: {ancestor} "
                        f"(a container named {wanted})", (*path, *POD_SPEC, "containers"),
                        subject="runtime")


