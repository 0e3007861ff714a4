"""`tjc validate -o policyreport`: the run's findings as PolicyReports, one per namespace.

The report covers the TrainJobs and runtimes of the inputs (as placed: `--namespace`; one
without a namespace where `kubectl apply` puts it, `default`). Each is checked with the rules
of the policy set that apply to its kind; a TrainJob the cluster would take is also compiled,
so the JobSet rules count for it too, but for those its runtime's template breaks (reported at
the runtime, as validate reports them). What passes, fails or was exempted is then
`compiler.io.policyreport`'s to write. Called by `report_out`; reads the inputs again
(one more pass, for the objects: the report lists those that passed).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from compiler.common.diagnostics import Diagnostic, ObjectRef, refused
from compiler.common.jsondata import Obj
from compiler.core.resolve import RUNTIME_KINDS, object_ref
from compiler.io.emit import yaml_stream
from compiler.io.inputs import classified
from compiler.io.loader import Source
from compiler.io.placement import Placement
from compiler.io.policyreport import Subject, checked_rules, reports

if TYPE_CHECKING:
    from compiler.policy.engine import PolicySet

DEFAULT_NAMESPACE = "default"


def render(diagnostics: list[Diagnostic], sources: Iterable[Source],
           placement: Placement | None, policies: PolicySet | None) -> str:
    """The reports of the run as a YAML stream (`kubectl apply -f` takes it)."""
    found: dict[ObjectRef | None, list[Diagnostic]] = {}
    for d in diagnostics:
        found.setdefault(d.obj, []).append(d)
    subjects = list(_subjects(sources, placement, policies, found))
    if policies is None:
        return yaml_stream(reports(subjects, diagnostics))
    severities = {r.id: r.severity for r in policies.rules()}
    on_jobset = set(policies.applicable("JobSet")) - set(policies.applicable("TrainJob"))
    return yaml_stream(reports(subjects, diagnostics, severities, on_jobset))


def _subjects(sources: Iterable[Source], placement: Placement | None,
              policies: PolicySet | None, found: dict[ObjectRef | None, list[Diagnostic]]
              ) -> Iterator[Subject]:
    seen: set[ObjectRef] = set()
    for item in classified(sources, placement):
        if isinstance(item, Diagnostic) or item[1] not in ("TrainJob", *RUNTIME_KINDS):
            continue
        data = item[0].data
        ref = object_ref(data)
        if ref in seen or not ref.name:
            continue
        seen.add(ref)
        rules = _rules(data, ref, policies, found) if policies is not None else ()
        scope = "" if ref.kind == "ClusterTrainingRuntime" else \
            (ref.namespace or DEFAULT_NAMESPACE)
        yield Subject(ref, str(data.get("apiVersion") or ""), rules=tuple(rules), scope=scope)


def _rules(data: Obj, ref: ObjectRef, policies: PolicySet,
           found: dict[ObjectRef | None, list[Diagnostic]]) -> list[str]:
    """The rules the object was checked with."""
    rules = policies.applicable(ref.kind)
    if ref.kind != "TrainJob":
        return rules
    at_runtime = {d.rule for d in found.get(_runtime_of(data), [])}
    return list(checked_rules(rules, policies.applicable("JobSet"),
                              not refused(found.get(ref, [])), at_runtime))


def _runtime_of(trainjob: Obj) -> ObjectRef:
    """The runtime a TrainJob references, as the findings about that runtime name it."""
    spec = trainjob.get("spec")
    ref = spec.get("runtimeRef") if isinstance(spec, dict) else None
    ref = ref if isinstance(ref, dict) else {}
    kind = str(ref.get("kind") or "ClusterTrainingRuntime")
    meta = trainjob.get("metadata")
    namespace = (meta if isinstance(meta, dict) else {}).get("namespace") or ""
    return ObjectRef(kind, str(ref.get("name") or ""),
                     str(namespace) if kind == "TrainingRuntime" else "")
