"""`compile_trainjob`: one TrainJob and its runtime in, the objects upstream creates out.

The pipeline: structural check, CRD defaulting, context build (§2), the active plugins in graph
order (each returns edits the core applies), the JobSet builder last. Returns plain dicts and
diagnostics; never raises for bad input, never mutates its arguments, reads no file, clock,
environment or random source. Callers: the CLI, the library API, the controller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler import structural
from compiler.context import Context, build_context
from compiler.defaults import apply_defaults
from compiler.diagnostics import Diagnostic, ObjectRef, error, has_errors, with_object
from compiler.errors import TjcError
from compiler.plugins import REGISTRY
from compiler.plugins.base import PluginSpec
from compiler.plugins.edits import apply_edit
from compiler.plugins.graph import plugin_order
from compiler.resolve import RUNTIME_KINDS, runtime_key, wanted_key

Obj = dict[str, Any]


@dataclass(frozen=True)
class CompileResult:
    """The objects created for one TrainJob (empty on error) and every diagnostic."""

    objects: tuple[Obj, ...]
    diagnostics: tuple[Diagnostic, ...]
    plugins: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when no diagnostic is an error."""
        return not has_errors(self.diagnostics)


def compile_trainjob(trainjob: Mapping[str, Any], runtime: Mapping[str, Any]) -> CompileResult:
    """Compile one TrainJob against the runtime it references."""
    ref = _object_ref(trainjob)
    problems = _check_inputs(trainjob, runtime)
    if problems:
        return CompileResult((), tuple(with_object(problems, ref)))
    tj, notes = structural.prune("TrainJob", _prune_nulls(trainjob), subject="trainjob")
    rt, rt_notes = structural.prune(str(runtime["kind"]), _prune_nulls(runtime),
                                    subject="runtime")
    notes += rt_notes
    tj = apply_defaults("TrainJob", tj)
    rt = apply_defaults(str(runtime["kind"]), rt)
    mismatch = _runtime_mismatch(tj, rt)
    if mismatch:
        return CompileResult((), tuple(with_object([*notes, mismatch], ref)))
    try:
        ctx = build_context(tj, rt)
        plugins = plugin_order([p for p in REGISTRY if p.active(ctx)])
        objects, diagnostics = _run_plugins(ctx, plugins)
    except TjcError as exc:
        return CompileResult((), tuple(with_object([*notes, exc.diagnostic], ref)))
    diagnostics = notes + diagnostics
    if has_errors(diagnostics):
        objects = []
    return CompileResult(tuple(objects), tuple(with_object(diagnostics, ref)),
                         tuple(p.name for p in plugins))


def _run_plugins(ctx: Context, plugins: list[PluginSpec]) -> tuple[list[Obj], list[Diagnostic]]:
    objects: list[Obj] = []
    diagnostics: list[Diagnostic] = []
    for plugin in plugins:
        result = plugin.run(ctx)
        for edit in result.edits:
            apply_edit(ctx, edit)
        objects.extend(result.objects)
        diagnostics.extend(result.diagnostics)
    return objects, diagnostics


def _object_ref(trainjob: Mapping[str, Any]) -> ObjectRef:
    meta = trainjob.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return ObjectRef("TrainJob", str(meta.get("name", "")), str(meta.get("namespace") or ""))


def _check_inputs(trainjob: Mapping[str, Any], runtime: Mapping[str, Any]) -> list[Diagnostic]:
    if not isinstance(trainjob, Mapping) or trainjob.get("kind") != "TrainJob":
        return [error("TJC-INPUT-KIND", "the first argument must be a TrainJob document")]
    if not isinstance(runtime, Mapping) or runtime.get("kind") not in RUNTIME_KINDS:
        return [error("TJC-INPUT-KIND", "the runtime must be a TrainingRuntime or "
                      "ClusterTrainingRuntime document", subject="runtime")]
    problems = structural.check("TrainJob", dict(trainjob), subject="trainjob")
    problems += structural.check(str(runtime["kind"]), dict(runtime), subject="runtime")
    meta = trainjob.get("metadata")
    if not problems and not (isinstance(meta, Mapping) and meta.get("name")):
        problems.append(error("TJC-SCHEMA-REQUIRED", "required field 'name' is missing",
                              ("metadata",)))
    return problems


def _runtime_mismatch(tj: Obj, rt: Obj) -> Diagnostic | None:
    wanted = wanted_key(tj)
    if isinstance(wanted, Diagnostic):
        return wanted
    have = runtime_key(rt)
    if (have.kind, have.name) != (wanted.kind, wanted.name) or (
            have.kind == "TrainingRuntime" and have.namespace != wanted.namespace):
        return error("TJC-RUNTIME-MISMATCH",
                     f"the TrainJob references {wanted.kind} {wanted.name!r} but was given "
                     f"{have.kind} {have.namespace + '/' if have.namespace else ''}{have.name}",
                     ("spec", "runtimeRef"))
    return None


def _prune_nulls(value: Any) -> Any:
    """Copy without null map values (the API server prunes them before defaulting)."""
    if isinstance(value, Mapping):
        return {str(k): _prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune_nulls(v) for v in value]
    return value
