"""The one pipeline: a TrainJob admitted, compiled, judged by the policy packs and located.

`Session.process(doc)` is the whole way of one TrainJob, for every application (validate, which
drops the objects; render and the GitOps modes; the controller; `validate_documents`):
1. admission, as the API server would (`compiler.core.admission`: structure, CRD defaults,
   schema, CEL, upstream's webhook rules with the runtime it references, the Pods' own
   refusals), and the quirk warnings (`quirks`);
2. the compile of the TrainJob as admitted (`compile_defaulted`; its refusals: what the
   cluster could never run);
3. the policy packs on the TrainJob and on its JobSet (`compiler.policy.check.PolicyChecker`,
   located through the compile's provenance record);
4. every diagnostic located in the inputs and each problem said once (`_locate`, `_once`:
   the one place where diagnostics are de-duplicated; across documents, a runtime's policy
   finding met again in every JobSet copying it is dropped by `PolicyChecker.once`).

A `Session` is one run: the runtime table, the previous versions, the policies, kubectl's field
validation, the Kubeflow Trainer release (`compiler.core.release`: whose CRDs, webhook rules and
controller the run reproduces), the JobSet release the cluster runs (when it is not the Trainer
release's own, a warning for each field of a runtime or a compiled JobSet it would drop:
`compiler.kube.jobsetapi`) and the run's memos (each runtime checked once, whatever uses it).
Pure but for the policy evaluator it is given; reads no file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from compiler.common.diagnostics import (
    Diagnostic,
    ObjectRef,
    Path,
    Severity,
    format_path,
    one_per_problem,
    refused,
)
from compiler.common.jsondata import Obj, get_path
from compiler.common.records import dataclass
from compiler.core import admission
from compiler.core.compile import CompileResult, compile_defaulted, compile_trainjob
from compiler.core.context import CompileOptions
from compiler.core.release import DEFAULT as DEFAULT_RELEASE
from compiler.core.release import Release
from compiler.core.resolve import (
    ObjectKey,
    RuntimeKey,
    not_found,
    object_key,
    object_ref,
    wanted_key,
)
from compiler.io.inputs import RuntimeEntry
from compiler.io.loader import Document
from compiler.kube import jobsetapi
from compiler.kube.defaults import apply_defaults
from compiler.pipeline import quirks

if TYPE_CHECKING:
    from compiler.policy.check import PolicyChecker

RUNTIME_SPEC: Path = ("spec", "template", "spec")


@dataclass
class JobResult:
    """What the pipeline gave for one TrainJob: the objects the cluster would create (none
    when it would refuse the TrainJob) and every diagnostic, located."""

    trainjob: Document
    objects: list[dict[str, Any]] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def name(self) -> str:
        """`<namespace>/<name>` of the TrainJob."""
        meta = self.trainjob.data.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"

    @property
    def errors(self) -> list[Diagnostic]:
        """The diagnostics that refuse the TrainJob (or, from a policy, the change)."""
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]


@dataclass
class Checked:
    """A runtime after admission (and its policies), with its located diagnostics."""

    doc: Document
    data: Obj
    diagnostics: list[Diagnostic] = field(default_factory=list)


class Session:
    """One run of the pipeline over a runtime table; owns the run's memos."""

    def __init__(self, table: dict[RuntimeKey, RuntimeEntry],
                 previous: dict[ObjectKey, Obj] | None = None,
                 policies: PolicyChecker | None = None, fields: str = "strict",
                 release: Release = DEFAULT_RELEASE, jobset: str | None = None) -> None:
        self.table = table
        self.previous = previous or {}
        self.policies = policies
        self.fields = fields  # kubectl's field validation of unknown fields
        self.release = release  # the options of `process` must name the same
        # the cluster's JobSet release, when it is not the one the Trainer release is built
        # with (whose API the runtime CRDs embed: nothing to check then)
        self.jobset = jobset if jobset not in (None, release.jobset) else None
        self.runtimes: dict[tuple[str, int, tuple[str | int, ...]], Checked] = {}

    def runtime(self, doc: Document) -> Checked:
        """A runtime document, admitted and judged by the policies once per run."""
        where = (doc.source.name, doc.index, doc.base)
        checked = self.runtimes.get(where)
        if checked is None:
            old = self.previous.get(object_key(doc.data))
            typed, found = admission.admit_runtime(doc.data, old, self.fields, self.release)
            if self.jobset is not None:
                found += self._dropped(get_path(typed, *RUNTIME_SPEC), RUNTIME_SPEC, "runtime")
            located = _locate(found, doc, None, object_ref(doc.data))
            if self.policies is not None:
                located += self.policies.document(doc, typed)
            checked = self.runtimes[where] = Checked(doc, typed, located)
        return checked

    def admit(self, doc: Document, old: Obj | None = None) -> tuple[list[Diagnostic], Obj]:
        """Step 1: every admission diagnostic and quirk of one TrainJob and its policies'
        findings on it, located; and the TrainJob as admitted and defaulted. `old`: its
        previous version (else the session's, if it has one)."""
        old = old if old is not None else self.previous.get(object_key(doc.data))
        data, found = admission.check_object("TrainJob", doc.data, old, self.fields,
                                             self.release)
        key = wanted_key(data)
        if isinstance(key, Diagnostic):
            return _locate([*found, key], doc, None, object_ref(doc.data)), data
        entry = self.table.get(key)
        rt = self.runtime(entry.doc) if entry is not None else None
        if entry is None:
            found += _elsewhere(key, self.table)
        elif rt is not None and refused(rt.diagnostics):
            found.append(admission.runtime_invalid(entry.doc.data))
        trainjob = admission.well_typed(data, found)
        found += admission.trainjob_rules(trainjob, rt.data if rt is not None else None, old,
                                          self.release)
        if rt is not None:
            found += quirks.check(trainjob, rt.data)
        located = _locate(found, doc, entry.doc if entry else None, object_ref(doc.data))
        if self.policies is not None:
            located += self.policies.document(doc, trainjob)
        return located, data

    def process(self, doc: Document, options: CompileOptions | None = None, *,
                validate: bool = True, old: Obj | None = None) -> JobResult:
        """The pipeline for one TrainJob (`old`: its previous version, for an update).
        `validate=False` compiles what the cluster would refuse too, with no admission and
        no policies (as upstream's controller does when its webhook is bypassed; `tjc render
        --no-validate`). `options` must name the session's release (ValueError otherwise)."""
        options = self._options(options)
        if not validate:
            return self._unvalidated(doc, options)
        result = JobResult(doc)
        result.diagnostics, data = self.admit(doc, old)
        entry = None if refused(result.diagnostics) else self._entry(data)
        if entry is None:
            return result
        compiled = compile_defaulted(data, entry.get(self.release), options=options)
        result.objects = list(compiled.objects)
        found = list(compiled.diagnostics)
        if self.jobset is not None:
            found += [d for obj in result.objects if obj.get("kind") == "JobSet"
                      for d in self._dropped(obj.get("spec"), ("spec", "runtimeRef"),
                                             "trainjob")]
        result.diagnostics = _once(result.diagnostics, found, doc, entry.doc)
        if self.policies is not None and result.objects and compiled.origins is not None:
            result.diagnostics += self._jobset_policies(doc, data, entry, compiled)
        return result

    def _dropped(self, spec: Any, at: Path, subject: str) -> list[Diagnostic]:
        """A warning for each field of a JobSet spec (a runtime's template at `at`, else a
        compiled JobSet's, reported at `at` of the TrainJob) the cluster's JobSet drops."""
        jobset, own = self.jobset or "", self.release.jobset
        out = []
        for path in jobsetapi.dropped(spec, jobset):
            where = (*at, *path) if subject == "runtime" else at
            shown = "" if subject == "runtime" else f"JobSet spec.{format_path(path)}: "
            out.append(Diagnostic(
                Severity.WARNING, "TJC-JOBSET-DROPPED",
                f"{shown}JobSet {jobset} does not know this field: its API server drops it "
                f"from the JobSet silently (Kubeflow Trainer {self.release.version} is built "
                f"with JobSet {own}); install JobSet {own}", where, subject=subject))
        return out

    def _options(self, options: CompileOptions | None) -> CompileOptions | None:
        """The options of a compile in this session: of its release."""
        if options is None:
            return None if self.release.newest else \
                CompileOptions(trainer_version=self.release.version)
        if options.trainer_version != self.release.version:
            raise ValueError(f"compile options for Kubeflow Trainer {options.trainer_version} "
                             f"in a session of {self.release.version}")
        return options

    def _entry(self, data: Obj) -> RuntimeEntry | None:
        key = wanted_key(data)
        return None if isinstance(key, Diagnostic) else self.table.get(key)

    def _jobset_policies(self, doc: Document, data: Obj, entry: RuntimeEntry,
                         compiled: CompileResult) -> list[Diagnostic]:
        """Step 3 on the compiled JobSet (`PolicyChecker.jobset`)."""
        jobset = next((o for o in compiled.objects if o.get("kind") == "JobSet"), None)
        if self.policies is None or jobset is None or compiled.origins is None:
            return []
        return self.policies.jobset(doc, data, entry.doc, jobset, compiled.origins)

    def _unvalidated(self, doc: Document, options: CompileOptions | None) -> JobResult:
        result = JobResult(doc)
        key = wanted_key(_defaulted_ref(doc.data, self.release))
        if isinstance(key, Diagnostic):
            result.diagnostics.append(key.at(doc.locate(key.path)))
            return result
        entry = self.table.get(key)
        if entry is None:
            result.diagnostics.append(not_found(key).at(doc.locate(("spec", "runtimeRef",
                                                                     "name"))))
            return result
        compiled = compile_trainjob(doc.data, entry.get(self.release), options=options,
                                    validate=False)
        result.objects = list(compiled.objects)
        result.diagnostics = _once([], compiled.diagnostics, doc, entry.doc)
        return result

    def jobset_document(self, doc: Document) -> list[Diagnostic]:
        """A JobSet written in the inputs: the packs' JobSet rules, as a compiled JobSet meets
        them (without policies, only the notice that tjc does not check it otherwise)."""
        if self.policies is None:
            return [skipped_jobset(doc)]
        return self.policies.document(doc, doc.data)


def _once(found: list[Diagnostic], compiled: Iterable[Diagnostic], doc: Document,
          runtime: Document) -> list[Diagnostic]:
    """Step 4 for the compile's diagnostics: located (in the runtime when they are about it),
    each problem once (admission and the compile can both see one; `one_per_problem`)."""
    out = list(found)
    seen = {(d.rule, d.field_path, d.locations) for d in out}
    for diag in compiled:
        located = diag.at((runtime if diag.subject == "runtime" else doc).locate(diag.path))
        key = (located.rule, located.field_path, located.locations)
        if key not in seen:
            seen.add(key)
            out.append(located)
    return one_per_problem(out)


def _locate(diagnostics: Sequence[Diagnostic], doc: Document, runtime: Document | None,
            obj: ObjectRef) -> list[Diagnostic]:
    """Step 4 for admission: each diagnostic at its field in the TrainJob or the runtime,
    each problem once (`one_per_problem`: where two layers state one problem, the better)."""
    out = []
    for d in diagnostics:
        where = runtime if d.subject == "runtime" and runtime is not None else doc
        out.append(replace(d, obj=d.obj or obj).at(where.locate(d.path)))
    return one_per_problem(sorted(out, key=lambda d: (d.locations[0], d.rule, d.message)))


def _elsewhere(key: RuntimeKey, table: dict[RuntimeKey, RuntimeEntry]) -> list[Diagnostic]:
    """A notice when a TrainingRuntime of that name exists only in other namespaces."""
    others = sorted(k.namespace for k in table if (k.kind, k.name) == (key.kind, key.name))
    if key.kind != "TrainingRuntime" or not others:
        return []
    return [Diagnostic(Severity.NOTICE, "TJC-RUNTIME-OTHER-NAMESPACE",
                       f"a TrainingRuntime {key.name} exists in namespace {', '.join(others)}, "
                       f"but a TrainJob can use only a TrainingRuntime of its own namespace "
                       f"({key.namespace}) or a ClusterTrainingRuntime", ("spec", "runtimeRef"))]


def _defaulted_ref(data: dict[str, Any], release: Release) -> dict[str, Any]:
    """Just enough of a TrainJob, defaulted, to resolve its runtime."""
    meta, spec = data.get("metadata"), data.get("spec")
    ref = spec.get("runtimeRef") if isinstance(spec, dict) else None
    return apply_defaults("TrainJob", {"metadata": meta if isinstance(meta, dict) else {},
                                       "spec": {"runtimeRef": ref if isinstance(ref, dict)
                                                else {}}}, release.version)


def skipped_jobset(doc: Document) -> Diagnostic:
    """The notice for a JobSet in the inputs when no policy checks it."""
    return Diagnostic(Severity.NOTICE, "TJC-INPUT-SKIPPED", "skipped JobSet "
                      f"({doc.data.get('apiVersion')}): not a Kubeflow Trainer kind").at(
        doc.locate())

