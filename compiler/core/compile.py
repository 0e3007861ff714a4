"""`compile_trainjob`: one TrainJob and its runtime in, the objects upstream creates out.

The pipeline: structural pass and CRD defaulting of both inputs, the context build (§2), the
active plugins in graph order (each returns edits the core applies), the JobSet builder last.
A runtime can be prepared once (`prepare_runtime`) and reused for many TrainJobs. Returns plain
dicts and diagnostics; never raises for bad input, never mutates its arguments, reads no file,
clock, environment or random source (but the start-up cache, `compiler.common.diskcache`,
which never changes a result). `compile_trainjob` admits the TrainJob first (as the API
server would) unless told not to. Callers: the render application, the controller, the library
API.
"""

from __future__ import annotations

import marshal
from collections.abc import Mapping, Sequence
from dataclasses import field
from functools import lru_cache
from typing import Any, cast

from compiler.common.diagnostics import (
    Diagnostic,
    ObjectRef,
    Severity,
    error,
    has_errors,
    with_object,
)
from compiler.common.errors import TjcError
from compiler.common.jsondata import Obj, fast_copy
from compiler.common.records import dataclass
from compiler.core import admission, limits, podrefusals
from compiler.core.context import (
    DEFAULT_OPTIONS,
    CompileOptions,
    Context,
    MergedSpecs,
    build_context,
)
from compiler.core.plugins import registry
from compiler.core.plugins.base import PluginResult, PluginSpec
from compiler.core.plugins.edits import apply_edits
from compiler.core.plugins.graph import plugin_order
from compiler.core.provenance import Origin, Recorder, made
from compiler.core.release import DEFAULT as DEFAULT_RELEASE
from compiler.core.release import Release
from compiler.core.resolve import RUNTIME_KINDS, RuntimeKey, runtime_key, wanted_key
from compiler.kube import roundtrip as typed
from compiler.kube import structural
from compiler.kube.defaults import default_in_place

TRAINER_CONTROLLER = "trainer.kubeflow.org/trainjob-controller"


@dataclass(frozen=True)
class CompileResult:
    """The objects created for one TrainJob (empty on error, but for errors about the Pods
    only, subject `pods`: the cluster takes those objects) and every diagnostic; `origins`,
    where each field of the objects came from (`compiler.core.provenance`; None when the
    compile did not run), is not compared."""

    objects: tuple[Obj, ...]
    diagnostics: tuple[Diagnostic, ...]
    plugins: tuple[str, ...] = ()
    origins: Recorder | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        """True when no diagnostic is an error."""
        return not has_errors(self.diagnostics)


@dataclass(frozen=True)
class PreparedRuntime:
    """A runtime after the structural pass, defaulting and the typed round trip of its JobSet
    spec, for one Kubeflow Trainer `release` (its CRD and Go types; every compile with it is
    of that release); shared read-only by every compile that uses it."""

    doc: Obj
    spec: Obj
    diagnostics: tuple[Diagnostic, ...]
    release: Release = DEFAULT_RELEASE
    _admitted: list[tuple[Obj, list[Diagnostic]]] = field(default_factory=list, compare=False,
                                                          repr=False)
    _spec_bytes: list[bytes | None] = field(default_factory=list, compare=False, repr=False)
    _key: list[RuntimeKey] = field(default_factory=list, compare=False, repr=False)
    _plugins: list[tuple[PluginSpec, ...]] = field(default_factory=list, compare=False,
                                                   repr=False)
    merged: MergedSpecs = field(default_factory=MergedSpecs, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.merged.release != self.release:  # (the merges are the release's)
            object.__setattr__(self, "merged", MergedSpecs(self.release))

    def admitted(self) -> tuple[Obj, list[Diagnostic]]:
        """The runtime's own admission (`admission.admit_runtime`), computed once."""
        if not self._admitted:
            self._admitted.append(admission.admit_runtime(self.doc, release=self.release))
        return self._admitted[0]

    def key(self) -> RuntimeKey:
        """The runtime's lookup key (`runtime_key`), computed once."""
        if not self._key:
            self._key.append(runtime_key(self.doc))
        return self._key[0]

    def plugins(self, ctx: Context) -> tuple[PluginSpec, ...]:
        """The active plugins in graph order, decided once and kept here (the order comes from
        the start-up cache, or networkx): a plugin's `active` reads only the runtime's
        mlPolicy and podGroupPolicy (`ctx.ml_policy`, `ctx.pod_group_policy`, which runtime
        patches do not change); only the plugins the release registers run."""
        if not self._plugins:
            self._plugins.append(tuple(plugin_order([p for p in registry() if p.active(ctx)
                                                     and self.release.has_plugin(p.name)])))
        return self._plugins[0]

    def spec_copy(self) -> Obj:
        """A deep copy of `spec` for one compile to own: `fast_copy`, with the `marshal`
        bytes of the (read-only) spec made once, so a compile pays only the load."""
        if not self._spec_bytes:
            try:
                self._spec_bytes.append(marshal.dumps(self.spec))
            except (ValueError, TypeError):
                self._spec_bytes.append(None)
        blob = self._spec_bytes[0]
        return fast_copy(self.spec) if blob is None else cast(Obj, marshal.loads(blob))


def prepare_runtime(runtime: Mapping[str, Any], release: Release = DEFAULT_RELEASE
                    ) -> PreparedRuntime:
    """Check, prune and default a runtime once, as a cluster of `release` stores it."""
    if not isinstance(runtime, Mapping) or runtime.get("kind") not in RUNTIME_KINDS:
        return PreparedRuntime({}, {}, (error(
            "TJC-INPUT-KIND", "the runtime must be a TrainingRuntime or ClusterTrainingRuntime "
            "document", subject="runtime"),), release)
    kind = str(runtime["kind"])
    bad_key = admission.key_error(runtime, "runtime")
    if bad_key is not None:
        return PreparedRuntime({}, {}, (bad_key,), release)
    version = release.version
    doc, problems = structural.sanitize(kind, dict(runtime), subject="runtime", release=version)
    if has_errors(problems):
        return PreparedRuntime({}, {}, tuple(problems), release)
    doc = default_in_place(kind, doc, version)
    template = (doc.get("spec") or {}).get("template") or {}
    return PreparedRuntime(doc, typed.jobset_spec(template.get("spec") or {}, release=version),
                           tuple(problems), release)


def compile_trainjob(trainjob: Mapping[str, Any],
                     runtime: Mapping[str, Any] | PreparedRuntime, *,
                     options: CompileOptions | None = None, validate: bool = True,
                     old: Mapping[str, Any] | None = None) -> CompileResult:
    """Compile one TrainJob against the runtime it references.

    First the TrainJob goes through admission (`admission.admit`: schema, CEL, webhook rules,
    with `old` the previous version on an update); what the cluster would refuse gives
    `ok=False`, the diagnostics and no objects. `validate=False` skips admission and compiles
    what the cluster would refuse too (as upstream's controller does when its webhook is
    bypassed; `tjc render --no-validate`). The release is `options.trainer_version`'s; a
    prepared runtime must have been prepared for it (ValueError otherwise)."""
    release = (options or DEFAULT_OPTIONS).release
    prepared = runtime if isinstance(runtime, PreparedRuntime) else \
        prepare_runtime(runtime, release)
    if prepared.release != release:
        raise ValueError(f"the runtime was prepared for Kubeflow Trainer "
                         f"{prepared.release.version}, not {release.version}")
    ref = _object_ref(trainjob)
    bad_key = None if validate else admission.key_error(trainjob, "trainjob")  # else: admit's
    if bad_key is not None:
        return CompileResult((), tuple(with_object([bad_key], ref)))
    admitted: list[Diagnostic] = []
    fields = (options or DEFAULT_OPTIONS).field_validation
    if validate:  # the runtime's unknown fields were pruned as it was prepared: said there
        strict = admission.field_validation(list(prepared.diagnostics), fields)
        if has_errors(strict):
            return CompileResult((), tuple(with_object(strict, ref)))
        admitted = admission.admit_against(trainjob, prepared.admitted(), old, fields, release)
        if has_errors(admitted):
            return CompileResult((), tuple(with_object(admitted, ref)))
    tj, notes = _prepare_trainjob(trainjob, release)
    seen = {(d.rule, d.path, d.message) for d in [*notes, *prepared.diagnostics]}
    notes += [d for d in admitted if (d.rule, d.path, d.message) not in seen]
    return compile_defaulted(tj, prepared, options=options, notes=notes, ref=ref,
                             refuse=validate)


def compile_defaulted(tj: Obj, prepared: PreparedRuntime, *, options: CompileOptions | None = None,
                      notes: list[Diagnostic] | None = None,
                      ref: ObjectRef | None = None, refuse: bool = True) -> CompileResult:
    """Compile a TrainJob that already went through the structural pass and defaulting (as
    `tjc render` has it after validation); `notes` are that pass's diagnostics. `refuse`
    False keeps a JobSet the cluster could never run (without validation, as upstream's
    controller would build it). The release is the prepared runtime's."""
    ref = ref or _object_ref(tj)
    notes = [*prepared.diagnostics, *(notes or [])]
    if has_errors(notes):
        return CompileResult((), tuple(with_object(notes, ref)))
    mismatch = _runtime_mismatch(tj, prepared.key())
    if mismatch:
        return CompileResult((), tuple(with_object([*notes, mismatch], ref)))
    manager = managed_elsewhere(tj) if prepared.release.managed_by_skip else None
    if manager is not None:
        return CompileResult((), tuple(with_object([*notes, manager], ref)))
    try:
        ctx, plugins, objects, diagnostics = _compile(tj, prepared, options or DEFAULT_OPTIONS,
                                                      refuse)
    except TjcError as exc:
        return CompileResult((), tuple(with_object([*notes, exc.diagnostic], ref)))
    diagnostics = notes + diagnostics
    if any(d.severity is Severity.ERROR and d.subject != "pods" for d in diagnostics):
        objects = []  # (the cluster takes the objects and refuses only the Pods: kept)
    return CompileResult(tuple(objects), tuple(with_object(diagnostics, ref)),
                         tuple(p.name for p in plugins), ctx.origins)


def _compile(tj: Obj, prepared: PreparedRuntime, options: CompileOptions, refuse: bool = True
             ) -> tuple[Context, tuple[PluginSpec, ...], list[Obj], list[Diagnostic]]:
    """The context, the active plugins in order, and what they made and said (raises
    `TjcError` on a compile error); with `refuse`, an error for a JobSet the cluster could
    never run (`limits`), else the errors the API server would give its Jobs and Pods
    (`podrefusals`)."""
    ctx = build_context(tj, prepared.doc, prepared.spec_copy(), prepared.merged,
                        prepared.release)
    ctx.options = options
    plugins = prepared.plugins(ctx)
    objects, diagnostics = _run_plugins(ctx, plugins)
    if refuse and not has_errors(diagnostics):  # what the cluster could never run, or whose
        refusal = limits.check(objects)         # Jobs and Pods it would refuse: on every path
        diagnostics += [refusal] if refusal is not None else \
            podrefusals.check(objects, tj, ctx.ml_policy, ctx.release)
    return ctx, plugins, objects, diagnostics


def _prepare_trainjob(trainjob: Mapping[str, Any], release: Release
                      ) -> tuple[Obj, list[Diagnostic]]:
    if not isinstance(trainjob, Mapping) or trainjob.get("kind") != "TrainJob":
        return {}, [error("TJC-INPUT-KIND", "the first argument must be a TrainJob document")]
    doc, problems = structural.sanitize("TrainJob", dict(trainjob), subject="trainjob",
                                        release=release.version)
    meta = doc.get("metadata")
    if not has_errors(problems) and not (isinstance(meta, dict) and meta.get("name")):
        problems.append(error("TJC-SCHEMA-REQUIRED", "required field 'name' is missing",
                              ("metadata",)))
    return default_in_place("TrainJob", doc, release.version), problems


def _run_plugins(ctx: Context, plugins: Sequence[PluginSpec]) -> tuple[list[Obj], list[Diagnostic]]:
    """Every plugin's enforce phase, then every build phase, both in graph order."""
    objects: list[Obj] = []
    diagnostics: list[Diagnostic] = []
    for phase in ("enforce", "build"):
        for plugin in plugins:
            step = getattr(plugin, phase)
            if step is None:
                continue
            result: PluginResult = step(ctx)
            if result.edits:
                apply_edits(ctx, result.edits, plugin.name)
            for obj in result.objects:  # (the JobSet builder records its own fields)
                ctx.origins.add_object(obj, _made_by(plugin.name))
            objects.extend(result.objects)
            diagnostics.extend(result.diagnostics)
    return objects, diagnostics


@lru_cache(maxsize=256)
def _made_by(plugin: str) -> Origin:
    """A side object is its plugin's, whole."""
    return made(f"plugin {plugin}")


def managed_elsewhere(tj: Mapping[str, Any]) -> Diagnostic | None:
    """A notice when `spec.managedBy` names a controller other than upstream's: upstream's
    controller then leaves the TrainJob alone and creates nothing (trainjob_controller.go,
    IsManagedByExternalController), so neither does tjc."""
    spec = tj.get("spec")
    manager = spec.get("managedBy") if isinstance(spec, (dict, Mapping)) else None
    if not isinstance(manager, str) or manager == TRAINER_CONTROLLER:
        return None
    return Diagnostic(Severity.NOTICE, "TJC-MANAGED-BY",
                      f"managed by {manager}, not by Kubeflow Trainer's controller: upstream "
                      "creates no objects for it, so none are rendered", ("spec", "managedBy"))


def _object_ref(trainjob: Mapping[str, Any]) -> ObjectRef:
    meta = trainjob.get("metadata") if isinstance(trainjob, (dict, Mapping)) else None
    meta = meta if isinstance(meta, (dict, Mapping)) else {}  # (dict first: no ABC check)
    return ObjectRef("TrainJob", str(meta.get("name", "")), str(meta.get("namespace") or ""))


def _runtime_mismatch(tj: Obj, have: RuntimeKey) -> Diagnostic | None:
    wanted = wanted_key(tj)
    if isinstance(wanted, Diagnostic):
        return wanted
    if (have.kind, have.name) != (wanted.kind, wanted.name) or (
            have.kind == "TrainingRuntime" and have.namespace != wanted.namespace):
        scope = f"{have.namespace}/" if have.namespace else ""
        return error("TJC-RUNTIME-MISMATCH",
                     f"the TrainJob references {wanted.kind} {wanted.name!r} but was given "
                     f"{have.kind} {scope}{have.name}", ("spec", "runtimeRef"))
    return None
