"""Policy diagnostics of one input document or one compiled JobSet, located in the inputs.

A violation in a runtime or TrainJob points at its own field. A violation in a compiled JobSet
points at the input that wrote that field, as its compile recorded it (`compiler.core.provenance`;
nothing is derived again here), and names that input's object and field: when the copy of the
runtime's template made the value, the runtime (reported once per run, however many TrainJobs
use it); otherwise the input value its last writer took (as `tjc explain` shows it), or, for a
value a plugin made, the JobSet's field, located at the TrainJob's spec. Finding
(`jobset_findings`) and locating are separate steps, so the finding can run apart from the
locating.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from compiler.common.diagnostics import Diagnostic, Location, ObjectRef
from compiler.common.jsondata import Obj, get_path
from compiler.core.provenance import Origin, Recorder, root_of
from compiler.core.resolve import object_ref
from compiler.io.loader import Document
from compiler.policy.engine import PolicySet, Violation

Path = tuple[str | int, ...]


class Finding(NamedTuple):
    """A violation of a compiled JobSet and what its compile recorded for the violation's
    field (`compiler.core.provenance`): `from_runtime`, whether the runtime's template made
    the value (its copy, and no later write changed it); else `writer`, the last write
    (None when unrecorded)."""

    violation: Violation
    from_runtime: bool
    writer: Origin | None = None


def jobset_findings(policies: PolicySet, trainjob: Obj, jobset: Obj,
                    origins: Recorder, today: datetime.date | None = None) -> list[Finding]:
    """The violations of the JobSet compiled from a (defaulted) TrainJob, each with the
    origins its compile recorded for the violation's field."""
    root = root_of(jobset)
    out = []
    for v in policies.check("JobSet", jobset, trainjob, today=today):
        at = (*root, *v.path)
        out.append(Finding(v, True) if origins.template_made(at) else
                   Finding(v, False, origins.lookup(at)))
    return out


class PolicyChecker:
    """Runs a policy set on inputs and JobSets, and locates what it finds in the inputs;
    exemptions expire against `today` (default: the set's own date; the controller gives the
    date of each decision)."""

    def __init__(self, policies: PolicySet, today: datetime.date | None = None) -> None:
        self.policies = policies
        self.today = today
        self._emitted: set[Diagnostic] = set()
        self._emitted_ids: set[int] = set()
        # A runtime template's violation is found again in every JobSet made from it, and
        # located the same way each time: kept per runtime (which the value keeps alive).
        self._at_runtime: dict[tuple[int, int, Path, str, Any], tuple[Document, Diagnostic]] \
            = {}

    def use_namespaces(self, labels: dict[str, dict[str, str]]) -> None:
        """The labels of the inputs' Namespace objects, by name (`PolicySet.use_namespaces`)."""
        self.policies.use_namespaces(labels)

    def document(self, doc: Document, data: Obj) -> list[Diagnostic]:
        """Violations of a TrainJob or runtime (defaulted `data`), located in `doc`."""
        found = self.policies.check(str(data.get("kind", "")), data, today=self.today)
        if not found:
            return []  # (every valid TrainJob: no built-in rule applies to TrainJobs)
        ref = object_ref(doc.data)
        out = [_with(v, doc.locate(v.path), ref) for v in found]
        return sorted(out, key=lambda d: (d.locations, d.rule, d.message))

    def jobset(self, tj: Document, trainjob: Obj, runtime: Document, jobset: Obj,
               origins: Recorder) -> list[Diagnostic]:
        """Violations of the JobSet compiled from a TrainJob (`origins`: what its compile
        recorded), located in the inputs."""
        return self.locate(tj, runtime, jobset_findings(self.policies, trainjob, jobset,
                                                        origins, self.today))

    def locate(self, tj: Document, runtime: Document,
               findings: Sequence[Finding]) -> list[Diagnostic]:
        """Diagnostics of a TrainJob's JobSet findings: at the runtime when its template made
        the value, else where the last writer of the field took it from."""
        out = []
        for f in findings:
            if f.from_runtime:
                out.append(self._in_runtime(runtime, f.violation))
            else:
                out.append(_written(f.violation, f.writer, tj, runtime))
        return out

    def _in_runtime(self, runtime: Document, v: Violation) -> Diagnostic:
        """A violation the runtime's template wrote, located in the runtime."""
        key = (id(runtime), id(v.rule), v.path, v.message, v.exempted)
        known = self._at_runtime.get(key)
        if known is not None and known[0] is runtime:
            return known[1]
        inner: Path = ("spec", "template", *v.path)
        located = _with(v, runtime.locate(inner), object_ref(runtime.data), inner)
        self._at_runtime[key] = (runtime, located)
        return located

    def once(self, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
        """The diagnostics without the policy ones already emitted (a runtime's violation is
        found again in every JobSet that copies the field)."""
        out = []
        for d in diagnostics:
            if d.subject == "policy":
                # (the very object emitted before, as `_in_runtime` gives it again, is known
                # by identity: `_emitted` keeps it alive, so its id is not reused)
                if id(d) in self._emitted_ids or d in self._emitted:
                    continue
                self._emitted.add(d)
                self._emitted_ids.add(id(d))
            out.append(d)
        return out


def _with(v: Violation, where: Location, ref: ObjectRef, path: Path | None = None) -> Diagnostic:
    d = v.diagnostic().at(where)
    return replace(d, path=d.path if path is None else path, obj=ref)


def _written(v: Violation, origin: Origin | None, tj: Document, runtime: Document
             ) -> Diagnostic:
    """A JobSet violation at the input value its field's last writer took, as `tjc explain`
    prints it: that input's object, field path and line (so a message names the field the user
    wrote); a value a plugin or the builder made (no input holds it), or a CRD default, stays
    at its JobSet path, located at the TrainJob's spec."""
    doc = {"trainjob": tj, "runtime": runtime}.get(origin.input) if origin is not None else None
    if origin is None or doc is None or not origin.path or (
            origin.default_note and get_path(doc.data, *origin.path) is None):
        return _with(v, tj.locate(("spec",)), object_ref(tj.data))
    return _with(v, doc.locate(origin.path), object_ref(doc.data), origin.path)
