"""PolicyReports (`wgpolicyk8s.io/v1alpha2`): what the policy packs and admission found of the
TrainJobs and runtimes, in the format Kyverno, Gatekeeper's exporters and Policy Reporter read.

`reports(subjects, diagnostics)` makes one `PolicyReport` per namespace (the TrainJobs and
TrainingRuntimes of that namespace) and one `ClusterPolicyReport` (the ClusterTrainingRuntimes),
each named `trainjob-compiler`. A result per finding: `policy` the pack (`admission` for the
rules the API server and upstream's webhooks apply, and the quirks), `rule` the rule id,
`result` fail (an error), warn (a warning) or skip (a violation an exemption suppressed, the
exemption in `properties`), the field path (`jobSetFieldPath` when it is one of the JobSet the
TrainJob compiles to: a finding whose object is the JobSet, or of one of `jobset_rules`) and
the file position, when there is one, in `properties`, the object in `resources`;
`severity` high for a deny rule or an admission error, medium for a warn rule, low for the
rest. Every rule a subject was checked with (`Subject.rules`, `checked_rules`) and did not
break passes: one `pass` result per rule, listing every object that passed it (so a
namespace of many TrainJobs keeps a report of a size that fits in etcd).
The `summary` counts object-rule pairs. A report over `MAX_BYTES` keeps its first results
(fail, warn, skip, then pass) and says in an annotation how many it left out.

Pure and canonical: no timestamps, results in a fixed order. Called by `tjc validate -o
policyreport` (`compiler.cli.report_out`) and by the controller (`--policy-reports`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import field

from compiler.common.diagnostics import Diagnostic, ObjectRef, Severity
from compiler.common.jsondata import Obj
from compiler.common.records import dataclass

API_VERSION = "wgpolicyk8s.io/v1alpha2"
NAME = "trainjob-compiler"
SOURCE = "trainjob-compiler"
ADMISSION = "admission"
MANAGED_BY = {"app.kubernetes.io/managed-by": "trainjob-compiler"}
TRUNCATED = "trainjob-compiler/results-left-out"
MAX_BYTES = 1 << 20  # etcd takes objects up to 1.5 MiB
_ORDER = {"fail": 0, "warn": 1, "skip": 2, "pass": 3}


@dataclass(frozen=True)
class Subject:
    """An object the report covers: its reference (as the findings about it name it), the
    rules it was checked with (each a pass unless a finding about it says otherwise), and
    the namespace it is reported in (`scope`: its own; "" for a cluster-scoped object; a
    file's object without one, where it is applied)."""

    ref: ObjectRef
    api_version: str = "trainer.kubeflow.org/v1alpha1"
    uid: str = ""
    rules: tuple[str, ...] = ()
    scope: str | None = None

    @property
    def namespace(self) -> str:
        return self.ref.namespace if self.scope is None else self.scope

    def resource(self) -> Obj:
        """The ObjectReference a result lists."""
        out: Obj = {"apiVersion": self.api_version, "kind": self.ref.kind, "name": self.ref.name}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.uid:
            out["uid"] = self.uid
        return out


@dataclass
class _Report:
    namespace: str
    results: list[Obj] = field(default_factory=list)
    passed: dict[str, list[Obj]] = field(default_factory=dict)  # rule id: its objects


def reports(subjects: Iterable[Subject], diagnostics: Iterable[Diagnostic],
            severities: Mapping[str, str] | None = None,
            jobset_rules: Collection[str] = ()) -> list[Obj]:
    """The reports (namespaces in order, the cluster's last) of the subjects and what was
    found of them (of a JobSet: of the TrainJob of its name); `severities` gives each policy
    rule's `deny` or `warn`. A finding whose object is no subject is left out."""
    by_scope: dict[str, list[Subject]] = {}
    for subject in subjects:
        by_scope.setdefault(subject.namespace, []).append(subject)
    found: dict[ObjectRef | None, list[Diagnostic]] = {}
    for d in diagnostics:
        found.setdefault(_owner(d), []).append(d)
    return [report(ns, by_scope[ns], [d for s in by_scope[ns] for d in found.get(s.ref, [])],
                   severities, jobset_rules)
            for ns in sorted(by_scope, key=lambda ns: (ns == "", ns))]


def report(namespace: str, subjects: Iterable[Subject], diagnostics: Iterable[Diagnostic],
           severities: Mapping[str, str] | None = None,
           jobset_rules: Collection[str] = ()) -> Obj:
    """The report of one namespace ("": the cluster's) over its subjects (none: a report
    with no results)."""
    known = {s.ref: s for s in subjects if s.namespace == namespace}
    found: dict[ObjectRef, list[Diagnostic]] = {ref: [] for ref in known}
    for d in diagnostics:
        owner = _owner(d)
        if owner in found:
            found[owner].append(d)
    out = _Report(namespace)
    for ref, subject in known.items():
        results = [r for d in found[ref]
                   if (r := result(d, subject, severities, jobset_rules)) is not None]
        out.results += results
        broken = {r["rule"] for r in results}
        for rule in subject.rules:
            if rule not in broken:
                out.passed.setdefault(rule, []).append(subject.resource())
    return _object(out, severities or {})


def _owner(d: Diagnostic) -> ObjectRef | None:
    """The object a finding is reported for: its own, the TrainJob of a JobSet's."""
    if d.obj is not None and d.obj.kind == "JobSet":
        return ObjectRef("TrainJob", d.obj.name, d.obj.namespace)
    return d.obj


def checked_rules(own: Sequence[str], jobset: Sequence[str], compiled: bool,
                  at_runtime: Collection[str]) -> tuple[str, ...]:
    """The rules a TrainJob was checked with: its own kind's, and when it was compiled (the
    cluster would take it) the JobSet's, but those its runtime's template breaks (a finding
    at the runtime, which the runtime's results hold)."""
    if not compiled:
        return tuple(own)
    return (*own, *(r for r in jobset if r not in at_runtime and r not in own))


def result(d: Diagnostic, subject: Subject, severities: Mapping[str, str] | None = None,
           jobset_rules: Collection[str] = ()) -> Obj | None:
    """The result of one finding about the subject (None for a notice that is no
    exemption used)."""
    if d.severity is Severity.ERROR:
        outcome = "fail"
    elif d.severity is Severity.WARNING:
        outcome = "warn"
    elif d.suppression is not None:
        outcome = "skip"
    else:
        return None
    policy = d.rule.split(".", 1)[0] if d.subject == "policy" else ADMISSION
    properties: dict[str, str] = {}
    if d.path:
        on_jobset = (d.obj is not None and d.obj.kind == "JobSet") or \
            (subject.ref.kind == "TrainJob" and d.rule in jobset_rules)
        properties["jobSetFieldPath" if on_jobset else "fieldPath"] = d.field_path
    if d.locations:
        properties["location"] = str(d.locations[0])
    if d.suppression is not None:
        properties["exemption"] = d.suppression.justification
    out: Obj = {"policy": policy, "rule": d.rule, "result": outcome,
                "severity": _severity(d, policy, severities or {}),
                "message": d.message, "resources": [subject.resource()],
                "source": SOURCE, "scored": True}
    if properties:
        out["properties"] = properties
    return out


def _severity(d: Diagnostic, policy: str, severities: Mapping[str, str]) -> str:
    if policy == ADMISSION:
        return "high" if d.severity is Severity.ERROR else "low"
    declared = severities.get(d.rule)
    if declared is None and d.suppression is not None:
        declared = "deny" if d.suppression.severity is Severity.ERROR else "warn"
    return {"deny": "high", "warn": "medium"}.get(declared or "", "low")


def _object(report: _Report, severities: Mapping[str, str]) -> Obj:
    results = sorted(report.results, key=_sort_key)
    for rule in sorted(report.passed):
        resources = sorted(report.passed[rule], key=_resource_key)
        results.append({"policy": rule.split(".", 1)[0], "rule": rule, "result": "pass",
                        "severity": {"deny": "high", "warn": "medium"}.get(
                            severities.get(rule, ""), "low"),
                        "resources": resources, "source": SOURCE, "scored": True})
    summary = {"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 0}
    for r in results:
        summary[r["result"]] += len(r["resources"])
    meta: Obj = {"name": NAME, "labels": dict(MANAGED_BY)}
    kind = "ClusterPolicyReport"
    if report.namespace:
        meta["namespace"] = report.namespace
        kind = "PolicyReport"
    kept, left = _within(results)
    if left:
        meta["annotations"] = {TRUNCATED: str(left)}
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "summary": summary,
            "results": kept}


def _sort_key(r: Obj) -> tuple[object, ...]:
    return (_ORDER[r["result"]], _resource_key(r["resources"][0]), r["policy"], r["rule"],
            r.get("properties", {}).get("fieldPath", ""), r.get("message", ""))


def _resource_key(resource: Obj) -> tuple[str, str]:
    return str(resource.get("kind", "")), str(resource.get("name", ""))


def _within(results: Sequence[Obj]) -> tuple[list[Obj], int]:
    """The results that fit in `MAX_BYTES` (in order), and how many did not."""
    size = 0
    for i, r in enumerate(results):
        size += len(json.dumps(r, separators=(",", ":"))) + 1
        if size > MAX_BYTES:
            return list(results[:i]), len(results) - i
    return list(results), 0
