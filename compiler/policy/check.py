"""Policy diagnostics of one input document or one compiled JobSet, located in the inputs.

A violation in a runtime or TrainJob points at its own field. A violation in a compiled JobSet
points at the input that wrote that field: when the field holds what the runtime's template
holds, at the runtime (reported once per run, with the runtime as the object, however many
TrainJobs use it); otherwise at the input value its writer recorded (`compiler.core.provenance`, as
`tjc explain` shows it), or at the TrainJob's spec for a value a plugin made. Finding
(`jobset_findings`) and locating are separate steps, so the finding can run apart from the
locating.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from compiler.common.diagnostics import Diagnostic, Location, ObjectRef
from compiler.common.jsondata import Obj, get_at, get_path
from compiler.core.compile import PreparedRuntime
from compiler.core.context import ANCESTOR_LABEL, NODE, TRAINER
from compiler.core.resolve import object_ref
from compiler.io.loader import Document
from compiler.policy.engine import PolicySet, Violation

if TYPE_CHECKING:
    from compiler.explain.explainer import Explainer

Path = tuple[str | int, ...]


class Finding(NamedTuple):
    """A violation of a compiled JobSet, whether the runtime's template wrote the field, and
    (`traced`) the TrainJob field `tjc explain` traces it to when that is known without
    tracing a compile (`_trainer_image`, `_trainer_resource`); None: trace it."""

    violation: Violation
    from_runtime: bool
    traced: Path | None = None


def jobset_findings(policies: PolicySet, trainjob: Obj, prepared: PreparedRuntime,
                    jobset: Obj, template: TemplateValues | None = None) -> list[Finding]:
    """The violations of the JobSet compiled from a (defaulted) TrainJob (`template`: the
    runtimes' template values already read, kept across calls)."""
    out = []
    template = template if template is not None else TemplateValues()
    for v in policies.check("JobSet", jobset, trainjob):
        from_runtime = template.holds(v.path, jobset, prepared)
        out.append(Finding(v, from_runtime, None if from_runtime else
                           _trainer_image(v.path, jobset, trainjob)
                           or _trainer_resource(v.path, jobset, trainjob, prepared.doc)))
    return out


class TemplateValues:
    """What runtimes' JobSet templates hold at violations' paths: a prepared runtime is
    read-only and shared by every TrainJob that uses it, and the same paths come back in
    each of their JobSets."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[Obj, dict[Path, Any]]] = {}

    def holds(self, path: Path, jobset: Obj, prepared: PreparedRuntime) -> bool:
        """Whether a JobSet holds at `path` exactly what the runtime's template holds."""
        if len(path) < 2 or path[0] != "spec":
            return False
        runtime = prepared.spec
        known = self._known.get(id(runtime))
        if known is None or known[0] is not runtime:
            if len(self._known) >= _TEMPLATE_LIMIT:
                self._known.clear()
            known = self._known[id(runtime)] = (runtime, {})
        values = known[1]
        value = values.get(path, _UNREAD)
        if value is _UNREAD:
            value = values[path] = get_at(runtime, path[1:])
        return bool(get_at(jobset, path) == value)


_TEMPLATE_LIMIT = 10_000  # runtimes
_UNREAD = object()


class PolicyChecker:
    """Runs a policy set on inputs and JobSets, and locates what it finds in the inputs."""

    def __init__(self, policies: PolicySet) -> None:
        self.policies = policies
        self._emitted: set[Diagnostic] = set()
        self._emitted_ids: set[int] = set()
        # A runtime template's violation is found again in every JobSet made from it, and
        # located the same way each time: kept per runtime (which the value keeps alive).
        self._at_runtime: dict[tuple[int, int, Path, str, Any], tuple[Document, Diagnostic]] \
            = {}
        self._template = TemplateValues()

    def document(self, doc: Document, data: Obj) -> list[Diagnostic]:
        """Violations of a TrainJob or runtime (defaulted `data`), located in `doc`."""
        found = self.policies.check(str(data.get("kind", "")), data)
        if not found:
            return []  # (every valid TrainJob: no built-in rule applies to TrainJobs)
        ref = object_ref(doc.data)
        out = [_with(v, doc.locate(v.path), ref) for v in found]
        return sorted(out, key=lambda d: (d.locations, d.rule, d.message))

    def jobset(self, tj: Document, trainjob: Obj, runtime: Document, prepared: PreparedRuntime,
               jobset: Obj) -> list[Diagnostic]:
        """Violations of the JobSet compiled from a TrainJob, located in the inputs."""
        return self.locate(tj, runtime, jobset_findings(self.policies, trainjob, prepared,
                                                        jobset, self._template), prepared)

    def locate(self, tj: Document, runtime: Document, findings: Sequence[Finding],
               prepared: PreparedRuntime | None = None) -> list[Diagnostic]:
        """Diagnostics of a TrainJob's JobSet findings: at the runtime when its template wrote
        the field, else where `tjc explain` traces the field to."""
        explainer: Explainer | None = None
        out = []
        for f in findings:
            if f.from_runtime:
                out.append(self._in_runtime(runtime, f.violation))
                continue
            if f.traced is not None:
                out.append(_with(f.violation, tj.locate(f.traced), object_ref(tj.data)))
                continue
            if explainer is None:
                from compiler.explain.explainer import Explainer  # only a traced finding needs it

                explainer = Explainer(tj, runtime, prepared)
            jobset = next((o for o in explainer.result.objects if o.get("kind") == "JobSet"), {})
            out.append(_with(f.violation, _traced(f.violation.path, jobset, explainer, tj),
                             object_ref(tj.data)))
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


_CONTAINERS = ("template", "spec", "template", "spec", "containers")
TRAINER_IMAGE: Path = ("spec", "trainer", "image")


def _trainer_job(path: Path, jobset: Obj) -> Obj | None:
    """The trainer replicatedJob when `path` lies in one of its containers
    (`spec.replicatedJobs[i].template.spec.template.spec.containers[k]...`), else None."""
    if len(path) < 10 or path[:2] != ("spec", "replicatedJobs") or path[3:8] != _CONTAINERS:
        return None
    job = get_at(jobset.get("spec"), path[1:3])
    labels = get_path(job, "template", "metadata", "labels")
    return job if isinstance(labels, dict) and labels.get(ANCESTOR_LABEL) == TRAINER else None


def _trainer_image(path: Path, jobset: Obj, trainjob: Obj) -> Path | None:
    """`spec.trainer.image` when `path` is the image of a `node` container of the trainer
    replicatedJob and the TrainJob sets an image: the JobSet builder writes it there from
    that field, as the last writer of that path or any path above it (the builder's
    `_trainer_overrides`, which records `jobset.IMAGE`), so `tjc explain` traces it to that
    field; None otherwise. `tests/test_policy_locate.py` compares this with the traced
    compile."""
    job = _trainer_job(path, jobset) if len(path) == 10 and path[9] == "image" else None
    if job is None:
        return None
    container = get_at(job, path[3:9])
    trainer = get_path(trainjob, "spec", "trainer")
    if not (isinstance(container, dict) and container.get("name") == NODE
            and isinstance(trainer, dict) and trainer.get("image") is not None
            and container.get("image") == trainer["image"]):
        return None
    return TRAINER_IMAGE


def _trainer_resource(path: Path, jobset: Obj, trainjob: Obj, runtime: Obj) -> Path | None:
    """`spec.trainer.resourcesPerNode.<requests|limits>.<name>` when `path` is that resource
    of the first `node` container of the trainer replicatedJob, the runtime has an
    mlPolicy and the TrainJob's resourcesPerNode sets it: the context build merges it there
    over the template's (`_merge_node_resources`, which records it as that field's) and
    nothing writes it later, so `tjc explain` traces it to that field; None otherwise.
    `tests/test_policy_locate.py` compares this with the traced compile."""
    job = _trainer_job(path, jobset) if len(path) == 12 and path[9] == "resources" \
        and path[10] in ("requests", "limits") else None
    if job is None:
        return None
    containers = get_at(job, path[3:8])
    wanted = get_path(trainjob, "spec", "trainer", "resourcesPerNode", path[10])
    if not (isinstance(containers, list) and isinstance(wanted, dict) and path[11] in wanted
            and isinstance(get_path(runtime, "spec", "mlPolicy"), dict)):
        return None
    first = next((i for i, c in enumerate(containers)
                  if isinstance(c, dict) and c.get("name") == NODE), None)
    return ("spec", "trainer", "resourcesPerNode", path[10], path[11]) \
        if first == path[8] else None


def _traced(path: Path, jobset: Obj, explainer: Explainer, tj: Document) -> Location:
    """Where the input value that the recorded writer of `path` copied is written; a value a
    plugin or the builder made (no input holds it) is located at the TrainJob's spec."""
    entry = explainer.attribute(path, get_path(jobset, *path))
    if entry.source is not None:
        return entry.source[0].locate(entry.source[1])
    return tj.locate(("spec",))
