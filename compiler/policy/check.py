"""Policy diagnostics of one input document or one compiled JobSet, located in the inputs.

A violation in a runtime or TrainJob points at its own field. A violation in a compiled JobSet
points at the input that wrote that field: when the field holds what the runtime's template
holds, at the runtime (reported once per run, with the runtime as the object, however many
TrainJobs use it); otherwise at the TrainJob field, runtime patch or plugin that set it, as
`tjc explain` finds it.
"""

from __future__ import annotations

from typing import Any

from compiler.compile import PreparedRuntime
from compiler.data import get_path
from compiler.diagnostics import Diagnostic, Location, ObjectRef
from compiler.explain import Explainer
from compiler.loader import Document
from compiler.policy.engine import PolicySet, Violation

Obj = dict[str, Any]
Path = tuple[str | int, ...]


def object_ref(data: Obj) -> ObjectRef:
    """kind/namespace/name of a document."""
    meta = data.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return ObjectRef(str(data.get("kind", "")), str(meta.get("name", "")),
                     str(meta.get("namespace") or ""))


class PolicyChecker:
    """Runs a policy set on inputs and JobSets; remembers what it reported at runtimes."""

    def __init__(self, policies: PolicySet) -> None:
        self.policies = policies
        self._seen: set[tuple[str, Location]] = set()

    def document(self, doc: Document, data: Obj) -> list[Diagnostic]:
        """Violations of a TrainJob or runtime (defaulted `data`), located in `doc`."""
        kind, ref = str(data.get("kind", "")), object_ref(doc.data)
        out = []
        for v in self.policies.check(kind, data):
            where = doc.locate(v.path)
            if kind != "TrainJob":
                self._seen.add((v.rule.id, where))
            out.append(_with(v, where, ref))
        return sorted(out, key=lambda d: (d.locations, d.rule, d.message))

    def jobset(self, tj: Document, trainjob: Obj, runtime: Document, prepared: PreparedRuntime,
               jobset: Obj) -> list[Diagnostic]:
        """Violations of the JobSet compiled from a TrainJob, located in the inputs."""
        explainer: Explainer | None = None
        out = []
        for v in self.policies.check("JobSet", jobset, trainjob):
            if _from_runtime(v.path, jobset, prepared):
                inner: Path = ("spec", "template", *v.path)
                where = runtime.locate(inner)
                if (v.rule.id, where) in self._seen:
                    continue
                self._seen.add((v.rule.id, where))
                out.append(_with(v, where, object_ref(runtime.data), inner))
                continue
            explainer = explainer or Explainer(tj, runtime)
            out.append(_with(v, _traced(v.path, jobset, explainer, tj), object_ref(tj.data)))
        return out


def _with(v: Violation, where: Location, ref: ObjectRef, path: Path | None = None) -> Diagnostic:
    d = v.diagnostic().at(where)
    return Diagnostic(d.severity, d.rule, d.message, d.path if path is None else path, ref,
                      d.subject, d.locations)


def _from_runtime(path: Path, jobset: Obj, prepared: PreparedRuntime) -> bool:
    """Whether the JobSet holds at `path` exactly what the runtime's template holds."""
    if len(path) < 2 or path[0] != "spec":
        return False
    return bool(get_path(jobset, *path) == get_path(prepared.spec, *path[1:]))


def _traced(path: Path, jobset: Obj, explainer: Explainer, tj: Document) -> Location:
    """Where the input that set `path` (or its nearest traced ancestor) is written."""
    for end in range(len(path), 1, -1):
        entry = explainer.attribute(path[:end], get_path(jobset, *path[:end]))
        if entry.source is not None:
            return entry.source[0].locate(entry.source[1])
    return tj.locate(("spec",))
