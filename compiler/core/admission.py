"""Admission: what the API server would refuse a TrainJob or runtime for, as data.

`admit(trainjob, runtime, old=None)` runs, on plain dicts, every check the cluster makes before
it stores an object: the structural pass and CRD defaulting, the JSON Schema of the CRD (with
the ObjectMeta name rules the CRDs carry as CEL), the CRDs' CEL rules (transition rules against
`old`, the previous version on an update), and upstream's validating webhooks, which see the
runtime the TrainJob references. The runtime is admitted too: a runtime the cluster would not
hold makes the TrainJob fail. `compile_trainjob` calls it first; the validate application and
the controller use the same pieces. Pure: no I/O, never raises for bad input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from compiler.common.diagnostics import Diagnostic, Path, Severity, error, refused
from compiler.common.jsondata import Obj, copy_json, get_path, non_string_key
from compiler.common.perobject import Admitted
from compiler.core import webhook
from compiler.core.context import may_take_resources
from compiler.core.release import DEFAULT as DEFAULT_RELEASE
from compiler.core.release import Release
from compiler.core.resolve import RUNTIME_KINDS
from compiler.kube import admitwalk, cel, objectmeta, podresources, structural
from compiler.kube.defaults import default_in_place
from compiler.kube.podspec import refusals as podspec
from compiler.kube.structural import UNKNOWN_RULE


def key_error(doc: Any, subject: str) -> Diagnostic | None:
    """An error for a mapping key that is not a string (a caller's dict; kubectl refuses such
    YAML), so that nothing after this sees one; None for a document without."""
    found = non_string_key(doc)
    if found is None:
        return None
    path, key = found
    shown = {None: "null", True: "true", False: "false"}.get(key, repr(key)) \
        if isinstance(key, (bool, type(None))) else repr(key)
    return error("TJC-SCHEMA-KEY", f"map key {shown} is not a string; expected field names",
                 path, subject=subject)


FIELD_VALIDATION = ("strict", "warn", "ignore")  # kubectl's --validate, the API's fieldValidation


def field_validation(diagnostics: list[Diagnostic], mode: str) -> list[Diagnostic]:
    """Unknown fields as kubectl's field validation `mode` treats them: `strict` (kubectl's
    default: the API server refuses the object) an error, `warn` a warning (the API server
    drops the field), `ignore` nothing."""
    if mode == "warn" or not any(d.rule == UNKNOWN_RULE for d in diagnostics):
        return diagnostics
    if mode == "ignore":
        return [d for d in diagnostics if d.rule != UNKNOWN_RULE]
    return [replace(d, severity=Severity.ERROR) if d.rule == UNKNOWN_RULE else d
            for d in diagnostics]


def check_object(kind: str, doc: Mapping[str, Any], old: Mapping[str, Any] | None = None,
                 fields: str = "strict", release: Release = DEFAULT_RELEASE
                 ) -> tuple[Obj, list[Diagnostic]]:
    """Structural pass, defaults, JSON Schema and CEL for one object (the CRD of `release`):
    the defaulted object and its diagnostics (unknown fields as `field_validation` has them)."""
    version = release.version
    data, diagnostics, found = admitwalk.admit(kind, dict(doc), release=version)  # one walk
    diagnostics = field_validation(diagnostics, fields)
    old_data = None
    if old is not None:
        old_data = default_in_place(kind, structural.sanitize(
            kind, dict(old), subject="document", release=version)[0], version)
    seen = {(d.rule, d.path) for d in diagnostics}
    diagnostics += [d for d in found if (d.rule, d.path) not in seen]
    diagnostics += cel.validate(kind, data, old_data, version)
    diagnostics += objectmeta.validate(kind, data)
    diagnostics += pod_amounts(kind, data, release)  # amounts the Pods would be refused for
    return data, diagnostics


_PER_NODE: Path = ("spec", "trainer", "resourcesPerNode")
_JOBS: Path = ("spec", "template", "spec", "replicatedJobs")
_CONTAINERS: Path = ("template", "spec", "template", "spec", "containers")


def pod_amounts(kind: str, data: Obj, release: Release = DEFAULT_RELEASE) -> list[Diagnostic]:
    """`podresources.validate`: amounts the Pods would be refused for, at the object, but
    those of a TrainJob's resourcesPerNode and those it may replace: they reach a Pod only
    through upstream's merge, so the compile judges them (`compiler.core.podrefusals`). A
    TrainJob's own are left out; a runtime's in the container the merge may replace
    (`context.may_take_resources`) are warnings."""
    found = podresources.validate(data)
    if kind == "TrainJob":
        return [d for d in found if d.path[:3] != _PER_NODE]
    if kind not in RUNTIME_KINDS or not found:
        return found
    ml_policy = get_path(data, "spec", "mlPolicy")
    return [_replaceable(d) if _in_node_container(d.path, data, ml_policy, release) else d
            for d in found]


def _in_node_container(path: Path, data: Obj, ml_policy: Any, release: Release) -> bool:
    return len(path) == 14 and path[:4] == _JOBS and path[5:10] == _CONTAINERS and \
        path[11] == "resources" and \
        may_take_resources(ml_policy, get_path(data, *path[:9]), path[10], release)


def _replaceable(d: Diagnostic) -> Diagnostic:
    return replace(d, severity=Severity.WARNING,
                   message=f"{d.message} unless the TrainJob's resourcesPerNode sets {d.path[-1]}")


def well_typed(data: Obj, diagnostics: list[Diagnostic]) -> Obj:
    """The object without its wrongly typed values: the webhook rules assume the schema's
    types (the API server checks the schema before it calls webhooks), and dropping only the
    bad values lets every other rule still report in the same run."""
    bad = [d.path for d in diagnostics if d.rule == "TJC-SCHEMA-TYPE" and d.path]
    if not bad:
        return data
    out: Obj = copy_json(data)
    for path in sorted(bad, key=len, reverse=True):
        parent: Any = out
        for part in path[:-1]:
            parent = _child(parent, part)
        if isinstance(parent, dict):
            parent.pop(path[-1], None)
        elif isinstance(parent, list) and isinstance(path[-1], int) and path[-1] < len(parent):
            parent[path[-1]] = {}
    return out


def _child(value: Any, part: str | int) -> Any:
    if isinstance(value, dict):
        return value.get(part)
    if isinstance(value, list) and isinstance(part, int) and part < len(value):
        return value[part]
    return None


def admit_runtime(runtime: Mapping[str, Any], old: Mapping[str, Any] | None = None,
                  fields: str = "strict", release: Release = DEFAULT_RELEASE
                  ) -> tuple[Obj, list[Diagnostic]]:
    """A runtime's admission in the Kubeflow Trainer `release`: the defaulted, well-typed
    runtime and its diagnostics (each with subject `runtime`)."""
    kind = str(runtime.get("kind")) if isinstance(runtime, Mapping) else ""
    if kind not in RUNTIME_KINDS:
        return {}, [error("TJC-INPUT-KIND", "the runtime must be a TrainingRuntime or "
                          "ClusterTrainingRuntime document", subject="runtime")]
    bad_key = key_error(runtime, "runtime") or key_error(old, "runtime")
    if bad_key is not None:
        return {}, [bad_key]
    data, found = check_object(kind, runtime, old, fields, release)
    typed = Admitted(well_typed(data, found))  # (owns the facts the rules work out of it)
    found += webhook.validate_runtime(typed, old=dict(old) if old is not None else None,
                                      release=release)
    found += podspec.refusals(kind, typed)
    return typed, [_about_runtime(d) for d in found]


def _about_runtime(d: Diagnostic) -> Diagnostic:
    """A runtime's diagnostic, about the runtime (one about its Pods stays about the Pods: the
    API server stores the runtime, and refuses only the Pods made from it later)."""
    if d.subject in ("runtime", "pods"):
        return d
    return Diagnostic(d.severity, d.rule, d.message, d.path, d.obj, "runtime", d.locations)


def runtime_invalid(runtime: Mapping[str, Any]) -> Diagnostic:
    """The TrainJob's error when its runtime has errors of its own."""
    meta = runtime.get("metadata") if isinstance(runtime, Mapping) else None
    name = meta.get("name", "") if isinstance(meta, Mapping) else ""
    kind = runtime.get("kind", "runtime") if isinstance(runtime, Mapping) else "runtime"
    return error("TJC-RUNTIME-INVALID", f"{kind} {name} has errors (reported at the runtime); "
                 "a cluster would not hold it, so this TrainJob cannot run",
                 ("spec", "runtimeRef"))


def admit(trainjob: Mapping[str, Any], runtime: Mapping[str, Any] | None,
          old: Mapping[str, Any] | None = None, fields: str = "strict",
          release: Release = DEFAULT_RELEASE) -> list[Diagnostic]:
    """Every admission diagnostic of a TrainJob (and of its runtime, when that has errors)
    in a cluster of the Kubeflow Trainer `release`: an error in the result means the cluster
    would refuse the TrainJob. `runtime` None means the referenced runtime does not exist;
    `old` is the TrainJob's previous version."""
    admitted = admit_runtime(runtime, fields=fields, release=release) \
        if runtime is not None else None
    return admit_against(trainjob, admitted, old, fields, release)


def admit_against(trainjob: Mapping[str, Any], runtime: tuple[Obj, list[Diagnostic]] | None,
                  old: Mapping[str, Any] | None = None, fields: str = "strict",
                  release: Release = DEFAULT_RELEASE) -> list[Diagnostic]:
    """`admit` with the runtime already admitted (`admit_runtime`'s result, for the same
    release), so a runtime shared by many TrainJobs is checked once."""
    if not isinstance(trainjob, Mapping) or trainjob.get("kind") != "TrainJob":
        return [error("TJC-INPUT-KIND", "the first argument must be a TrainJob document")]
    bad_key = key_error(trainjob, "trainjob") or key_error(old, "trainjob")
    if bad_key is not None:
        return [bad_key]
    data, found = check_object("TrainJob", trainjob, old, fields, release)
    rt: Obj | None = None
    if runtime is not None:
        rt, problems = runtime
        if refused(problems):
            found += [d for d in problems if d.severity is Severity.ERROR]
            found.append(runtime_invalid(rt))
    found += trainjob_rules(well_typed(data, found), rt, old, release)
    return found


def trainjob_rules(typed: Obj, runtime: Obj | None, old: Mapping[str, Any] | None = None,
                   release: Release = DEFAULT_RELEASE) -> list[Diagnostic]:
    """What admission says of a TrainJob after its schema (`typed`: well typed): upstream's
    webhook rules of `release`, which see the (admitted) runtime it references, and what the
    API server would refuse its Pods for."""
    found = webhook.validate_trainjob(typed, runtime, old=dict(old) if old is not None else None,
                                      release=release)
    return found + podspec.refusals("TrainJob", typed)
