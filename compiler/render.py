"""The render application: input sources in, one result per TrainJob out.

Two passes: the first collects the runtimes (only sources whose text can hold one are parsed),
user runtimes override the built-ins with a notice; the second streams each source's documents
and compiles every TrainJob as it comes, so memory stays flat however many TrainJobs a stream
holds. Other Kubernetes kinds are skipped with a notice; unknown Kubeflow kinds and kind-less
documents are reported. Every diagnostic's field path becomes the `file:line:col` of the
document it is about. Called by the CLI; also the library API for whole folders.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from compiler.compile import PreparedRuntime, compile_trainjob, prepare_runtime
from compiler.context import CompileOptions
from compiler.defaults import apply_defaults
from compiler.diagnostics import Diagnostic, ObjectRef, Severity, error
from compiler.loader import Document, Source, iter_source
from compiler.resolve import RUNTIME_KINDS, RuntimeKey, not_found, runtime_key, wanted_key

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
TRAINER_GROUP = "trainer.kubeflow.org/"


@dataclass
class JobResult:
    """What rendering one TrainJob gave."""

    trainjob: Document
    objects: list[dict[str, Any]] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def name(self) -> str:
        """`<namespace>/<name>` of the TrainJob."""
        meta = self.trainjob.data.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


@dataclass
class RuntimeEntry:
    """A known runtime and, once a TrainJob needed it, its prepared form."""

    doc: Document
    prepared: PreparedRuntime | None = None

    def get(self) -> PreparedRuntime:
        """Prepare the runtime on first use."""
        if self.prepared is None:
            self.prepared = prepare_runtime(self.doc.data)
        return self.prepared


@dataclass
class RenderResult:
    """Every TrainJob's result plus the problems not tied to one TrainJob."""

    jobs: list[JobResult]
    diagnostics: list[Diagnostic]


def kind_of(doc: Document) -> str | Diagnostic:
    """`TrainJob`, a runtime kind, or why the document is skipped or wrong."""
    api, kind = doc.data.get("apiVersion"), doc.data.get("kind")
    if not isinstance(api, str) or not isinstance(kind, str) or not api or not kind:
        return error("TJC-INPUT-NO-KIND", "document has no apiVersion and kind; expected a "
                     "TrainJob, TrainingRuntime or ClusterTrainingRuntime").at(doc.locate())
    if api == TRAINER_API and kind in ("TrainJob", *RUNTIME_KINDS):
        return kind
    if api.startswith(TRAINER_GROUP):
        return error("TJC-INPUT-UNKNOWN-KIND", f"unknown kind {kind} of {api}; expected "
                     f"TrainJob, TrainingRuntime or ClusterTrainingRuntime of {TRAINER_API}",
                     ("kind",)).at(doc.locate(("kind",)))
    return Diagnostic(Severity.NOTICE, "TJC-INPUT-SKIPPED",
                      f"skipped {kind} ({api}): not a Kubeflow Trainer kind").at(doc.locate())


def _may_hold_runtime(source: Source) -> bool:
    return "TrainingRuntime" in source.text


def runtime_table(sources: Sequence[Source], builtin: Sequence[Document]
                  ) -> tuple[dict[RuntimeKey, RuntimeEntry], list[Diagnostic]]:
    """Built-ins, then the runtimes of `sources`; a user runtime replaces a built-in one."""
    table = {runtime_key(doc.data): RuntimeEntry(doc) for doc in builtin}
    notes: list[Diagnostic] = []
    for source in filter(_may_hold_runtime, sources):
        for doc in iter_source(source):
            if isinstance(doc, Document) and kind_of(doc) in RUNTIME_KINDS:
                notes.extend(_add_runtime(table, doc))
    return table, notes


def _add_runtime(table: dict[RuntimeKey, RuntimeEntry], doc: Document) -> list[Diagnostic]:
    key = runtime_key(doc.data)
    previous = table.get(key)
    where = doc.locate(("metadata", "name"))
    if previous is not None and not previous.doc.source.name.startswith("<builtin>"):
        return [error("TJC-RUNTIME-DUPLICATE", f"{key.kind} {key.name} is defined twice (also "
                      f"at {previous.doc.locate()})", ("metadata", "name")).at(where)]
    table[key] = RuntimeEntry(doc)
    if previous is None:
        return []
    return [Diagnostic(Severity.NOTICE, "TJC-RUNTIME-OVERRIDE", f"{key.kind} {key.name} "
                       "overrides the built-in runtime", ("metadata", "name")).at(where)]


def render_stream(sources: Sequence[Source], builtin: Sequence[Document] = (),
                  options: CompileOptions | None = None) -> Iterator[JobResult | Diagnostic]:
    """Results and loose diagnostics in input order, one TrainJob at a time."""
    table, notes = runtime_table(sources, builtin)
    yield from notes
    for source in sources:
        for doc in iter_source(source):
            if isinstance(doc, Diagnostic):
                yield doc
                continue
            kind = kind_of(doc)
            if isinstance(kind, Diagnostic):
                yield kind
            elif kind == "TrainJob":
                yield render_one(doc, table, options)


def render_documents(docs: Sequence[Document], builtin: Sequence[Document] = ()
                     ) -> RenderResult:
    """Render already-loaded documents (each source is read again from its text)."""
    sources = list({id(doc.source): doc.source for doc in docs}.values())
    result = RenderResult([], [])
    for item in render_stream(sources, builtin):
        if isinstance(item, JobResult):
            result.jobs.append(item)
        else:
            result.diagnostics.append(item)
    return result


def render_one(tj: Document, table: dict[RuntimeKey, RuntimeEntry],
               options: CompileOptions | None = None) -> JobResult:
    """Resolve and compile one TrainJob, with located diagnostics."""
    result = JobResult(tj)
    raw_meta = tj.data.get("metadata")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    ref = ObjectRef("TrainJob", str(meta.get("name", "")), str(meta.get("namespace") or ""))
    spec = tj.data.get("spec")
    runtime_ref = spec.get("runtimeRef") if isinstance(spec, dict) else None
    key = wanted_key(apply_defaults("TrainJob", {"metadata": meta, "spec": {
        "runtimeRef": runtime_ref if isinstance(runtime_ref, dict) else {}}}))
    if isinstance(key, Diagnostic):
        result.diagnostics.append(replace(key, obj=ref).at(tj.locate(key.path)))
        return result
    entry = table.get(key)
    if entry is None:
        missing = not_found(key, (k.namespace for k in table
                                  if (k.kind, k.name) == (key.kind, key.name)))
        result.diagnostics.append(replace(missing, obj=ref).at(tj.locate(missing.path)))
        return result
    compiled = compile_trainjob(tj.data, entry.get(), options=options)
    result.objects = list(compiled.objects)
    for diag in compiled.diagnostics:
        doc = entry.doc if diag.subject == "runtime" else tj
        result.diagnostics.append(diag.at(doc.locate(diag.path)))
    return result
