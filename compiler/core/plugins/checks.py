"""What a plugin's admission rules and quirk warnings work on, and the helpers they share.

A plugin declares its admission rules (its `CustomValidation` hook, upstream's plugin
`Validate`) and its quirk warnings (its `Quirks` hook) in its own module
(`compiler.core.plugins.hooks`); `compiler.core.webhook` and `compiler.pipeline.quirks` run
them for every plugin of the registry. An `Admission` is one
TrainJob validation: the documents (after the structural pass and defaulting) and, built on
first use, the compile context without any plugin run (upstream's `ValidateObjects` sees the
runtime info that way). Pure; never mutates the documents.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import field
from typing import Any

from compiler.common.diagnostics import Diagnostic, Path, Severity, error
from compiler.common.errors import TjcError
from compiler.common.jsondata import Obj, fast_copy, get_path
from compiler.common.perobject import per_object
from compiler.common.records import dataclass
from compiler.core.context import Context, build_context, merge_each, spec_patches
from compiler.core.release import DEFAULT as DEFAULT_RELEASE
from compiler.core.release import Release
from compiler.kube import roundtrip as typed
from compiler.kube.releases import DEFAULT as DEFAULT_VERSION
from compiler.kube.strategicmerge import keyed

TRAINER_ENV: Path = ("spec", "trainer", "env")
NUM_NODES: Path = ("spec", "trainer", "numNodes")
RUNTIME_REF: Path = ("spec", "runtimeRef")
RUNTIME_REF_NAME: Path = ("spec", "runtimeRef", "name")
PATCHES: Path = ("spec", "runtimePatches")
POD_SPEC: Path = ("template", "spec", "template", "spec")
PATCH_JOBS: Path = ("trainingRuntimeSpec", "template", "spec", "replicatedJobs")
RUNTIME_JOBS: Path = ("spec", "template", "spec", "replicatedJobs")
PATCH_SPEC: Path = ("trainingRuntimeSpec", "template", "spec")


@dataclass
class Admission:
    """One TrainJob validation: the documents and the context built from them (None when the
    context cannot be built; upstream then has no runtime info), as the Kubeflow Trainer
    `release` builds it; the rules read the release's gates here. The context is built on
    first use: most TrainJobs meet no rule that needs it."""

    trainjob: Obj
    runtime: Obj
    problem: Diagnostic | None = None
    release: Release = DEFAULT_RELEASE
    merge_known: bool = field(default=False, init=False, repr=False)

    @functools.cached_property
    def ctx(self) -> Context | None:
        ctx, self.problem = _context(self.trainjob, self.runtime, self.release)
        return ctx

    def merge_problem(self) -> Diagnostic | None:
        """Why the context cannot be built (None when it can), without building it unless it
        is built already: only the merge of the runtime patches can fail
        (`compiler.core.context.merge_each`), so that merge alone decides, on the same
        typed copy of the runtime's spec `_context` starts from; and it need not run when
        every merge list of the patches and of the runtime's typed spec is `keyed`."""
        version = self.release.version
        if "ctx" not in self.__dict__ and not self.merge_known and not (
                keyed(self.patches) and _typed_facts(self.runtime, version)[1]):
            try:
                merge_each(_typed_spec(self.runtime, version), self.patches, self.release)
            except TjcError as exc:
                self.problem = exc.diagnostic
                self.__dict__["ctx"] = None  # what `ctx` would give: no context
        self.merge_known = True
        return self.problem

    def template_spec(self) -> Obj | None:
        """The JobSet spec after the patches for rules that read only names (of jobs,
        containers, volume mounts); None when the context cannot be built. It is the
        context's, except that no context is built when no patch has a spec: the context's
        spec is then the runtime's typed spec with only container resources merged, and that
        typed spec itself is returned, shared by every TrainJob of the runtime: read only."""
        if "ctx" not in self.__dict__ and not any(
                isinstance(get_path(patch, *PATCH_SPEC), dict)
                for patch in self.patches):
            return _typed(self.runtime, self.release.version)
        return self.ctx.spec if self.ctx is not None else None

    def job_names(self) -> set[str] | None:
        """The replicatedJob names of the JobSet spec after the patches (None when the
        context cannot be built), without building the context: a merge that succeeds keeps
        every job of the runtime's typed spec and adds those the patches' job lists name (it
        merges them by name and deletes none; the typed round trip after it keeps every
        list item; where a release merges job patches into the runtime's jobs only,
        `Release.patch_merge`, the patches add none)."""
        if "ctx" not in self.__dict__:
            specs = [get_path(patch, *PATCH_SPEC) for patch in self.patches]
            lists = [spec.get("replicatedJobs") for spec in specs if isinstance(spec, dict)]
            if all(jobs is None or isinstance(jobs, list) for jobs in lists) \
                    and self.merge_problem() is None:
                names = {name for name, _ in job_pods(_typed(self.runtime,
                                                             self.release.version))}
                if self.release.patch_merge == "spec":
                    names.update(str(rjob.get("name", "")) for jobs in lists
                                 for rjob in jobs or [])
                return names
        spec = self.template_spec()
        return None if spec is None else {name for name, _ in job_pods(spec)}

    @functools.cached_property
    def patches(self) -> list[Obj]:
        """What changes the runtime's template: the runtime patches (v2.1: the pod template
        overrides), `compiler.core.context.spec_patches`."""
        return spec_patches(self.trainjob, self.release)

    @functools.cached_property
    def spec(self) -> Obj:
        """The TrainJob's `spec` (an empty mapping when it is not one)."""
        spec = self.trainjob.get("spec")
        return spec if isinstance(spec, dict) else {}

    @property
    def trainer(self) -> Obj | None:
        trainer = self.spec.get("trainer")
        return trainer if isinstance(trainer, dict) else None

    def policy(self, group: str, key: str) -> Obj | None:
        """`spec.<group>.<key>` of the runtime (`mlPolicy.torch`, `podGroupPolicy.volcano`)."""
        return runtime_policy(self.runtime, group, key)


def runtime_policy(runtime: Obj, group: str, key: str) -> Obj | None:
    """`spec.<group>.<key>` of a runtime document, when it is a mapping."""
    spec = runtime.get("spec")
    policies = spec.get(group) if isinstance(spec, dict) else None
    value = policies.get(key) if isinstance(policies, dict) else None
    return value if isinstance(value, dict) else None


def job_pods(spec: Obj) -> Iterator[tuple[str, Obj]]:
    """(name, pod spec) per replicatedJob of a JobSet spec, as the context's pod sets hold
    them (`compiler.core.context`)."""
    for rjob in spec.get("replicatedJobs") or []:
        yield str(rjob.get("name", "")), rjob["template"]["spec"]["template"]["spec"]


def pod_container(pod_spec: Obj, name: str, *, init: bool = False) -> Obj | None:
    """The first container (or init container) with this name (`PodSet.container`)."""
    key = "initContainers" if init else "containers"
    return next((c for c in pod_spec.get(key) or [] if c.get("name") == name), None)


@per_object
def _typed_facts(runtime: Obj, version: str) -> tuple[Obj, bool]:
    """The runtime's JobSet spec after the typed round trip (of the release `version`) and
    whether it is `keyed`, worked out once per runtime object (callers validate many
    TrainJobs against one runtime); the spec is shared: read only."""
    template = as_dict(as_dict(runtime.get("spec")).get("template"))
    spec = typed.jobset_spec(as_dict(template.get("spec")), release=version)
    return spec, keyed(spec)


def _typed(runtime: Obj, version: str = DEFAULT_VERSION) -> Obj:
    """The runtime's JobSet spec after the typed round trip (shared: read only)."""
    found: Obj = _typed_facts(runtime, version)[0]
    return found


def _typed_spec(runtime: Obj, version: str) -> Obj:
    """A fresh copy of the runtime's JobSet spec after the typed round trip."""
    return fast_copy(_typed(runtime, version))  # type: ignore[no-any-return]


def _context(trainjob: Obj, runtime: Obj, release: Release
             ) -> tuple[Context | None, Diagnostic | None]:
    """`newRuntimeInfo`: the JobSet template after the runtime patches, as pod sets."""
    try:
        return build_context(trainjob, runtime, _typed_spec(runtime, release.version),
                             release=release), None
    except TjcError as exc:
        return None, exc.diagnostic


def reserved_envs(rule: str, trainer: Obj, reserved: frozenset[str]) -> Iterator[Diagnostic]:
    """One error at `spec.trainer.env` listing the reserved names used, sorted (Go's `%v`)."""
    env = trainer.get("env")
    if not env:
        return
    names = sorted(reserved.intersection(str(e.get("name")) for e in as_list(env)))
    if names:
        yield error(rule, f"must not have reserved envs, invalid envs configured: "
                    f"[{' '.join(names)}]", TRAINER_ENV)


def quirk(rule: str, message: str, path: Path, subject: str = "trainjob") -> Diagnostic:
    """A quirk warning: accepted by the cluster, but not what the user would expect."""
    return Diagnostic(Severity.WARNING, rule, message, path, subject=subject)


def trainer_of(trainjob: Obj) -> Obj | None:
    """The TrainJob's `spec.trainer`, when it is a mapping."""
    spec = trainjob.get("spec")
    trainer = spec.get("trainer") if isinstance(spec, dict) else None
    return trainer if isinstance(trainer, dict) else None


def patch_jobs(trainjob: Obj) -> Iterator[tuple[int, int, Obj]]:
    """(patch index, job index, job patch) for every replicatedJob of every runtime patch."""
    for i, patch in enumerate(as_list(get_path(trainjob, *PATCHES))):
        for j, pjob in enumerate(as_list(get_path(patch, *PATCH_JOBS))):
            yield i, j, pjob


def init_container_source(job: Admission, rjob_name: str, name: str) -> tuple[str, Path]:
    """Where an init container of a job comes from: the runtime template, else a patch."""
    for i, rjob in enumerate(as_list(get_path(job.runtime, *RUNTIME_JOBS))):
        if rjob.get("name") != rjob_name:
            continue
        for k, container in enumerate(as_list(get_path(rjob, *POD_SPEC, "initContainers"))):
            if container.get("name") == name:
                return "runtime", (*RUNTIME_JOBS, i, *POD_SPEC, "initContainers", k)
    for i, j, pjob in patch_jobs(job.trainjob):
        if pjob.get("name") != rjob_name:
            continue
        for k, container in enumerate(as_list(get_path(pjob, *POD_SPEC, "initContainers"))):
            if container.get("name") == name:
                return "trainjob", (*PATCHES, i, *PATCH_JOBS, j, *POD_SPEC, "initContainers", k)
    return "trainjob", ("spec", "trainer")


def annotation_source(job: Admission, key: str) -> tuple[str, Path]:
    """The last runtime patch that sets a JobSet template annotation, else the runtime."""
    where: tuple[str, Path] = ("runtime", ("spec", "template", "metadata", "annotations", key))
    for i, patch in enumerate(as_list(job.spec.get("runtimePatches"))):
        meta = get_path(patch, "trainingRuntimeSpec", "template", "metadata", "annotations")
        if isinstance(meta, dict) and key in meta:
            where = ("trainjob", (*PATCHES, i, "trainingRuntimeSpec", "template", "metadata",
                                  "annotations", key))
    return where


def as_dict(value: Any) -> Obj:
    """The value when it is a mapping, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Obj]:
    """The mappings of a list (nothing when it is not a list)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def strings(value: Any) -> list[str]:
    """The items of a list as strings (nothing when it is not a list)."""
    return [str(v) for v in value] if isinstance(value, list) else []


def go_quote(value: str) -> str:
    """Go's `%q` for the strings these messages quote."""
    return json.dumps(value, ensure_ascii=False)


def names_text(names: tuple[str, ...]) -> str:
    """`A, B and C`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
