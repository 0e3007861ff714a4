"""The render application: loaded documents in, one result per TrainJob out.

Sorts documents by kind (TrainJobs, runtimes, other Kubernetes kinds skipped with a notice,
unknown Kubeflow kinds and kind-less documents reported), lets user runtimes override the
built-ins (with a notice), resolves each TrainJob's runtime, compiles it, and turns every
diagnostic's field path into the `file:line:col` of the document it is about. Called by the
CLI; the library API for whole folders. Does no I/O itself beyond what `Document` caches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from compiler.compile import compile_trainjob
from compiler.defaults import apply_defaults
from compiler.diagnostics import Diagnostic, ObjectRef, Severity, error
from compiler.loader import Document
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
        meta = self.trainjob.data.get("metadata") or {}
        return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


@dataclass
class RenderResult:
    """Every TrainJob's result plus the problems not tied to one TrainJob."""

    jobs: list[JobResult]
    diagnostics: list[Diagnostic]


def classify(docs: Sequence[Document]) -> tuple[list[Document], list[Document], list[Diagnostic]]:
    """Split documents into TrainJobs and runtimes; report or skip everything else."""
    trainjobs: list[Document] = []
    runtimes: list[Document] = []
    notes: list[Diagnostic] = []
    for doc in docs:
        api, kind = doc.data.get("apiVersion"), doc.data.get("kind")
        if not isinstance(api, str) or not isinstance(kind, str) or not api or not kind:
            notes.append(error("TJC-INPUT-NO-KIND", "document has no apiVersion and kind; "
                               "expected a TrainJob, TrainingRuntime or ClusterTrainingRuntime")
                         .at(doc.locate()))
        elif api == TRAINER_API and kind == "TrainJob":
            trainjobs.append(doc)
        elif api == TRAINER_API and kind in RUNTIME_KINDS:
            runtimes.append(doc)
        elif api.startswith(TRAINER_GROUP):
            notes.append(error("TJC-INPUT-UNKNOWN-KIND",
                               f"unknown kind {kind} of {api}; expected TrainJob, "
                               f"TrainingRuntime or ClusterTrainingRuntime of {TRAINER_API}",
                               ("kind",)).at(doc.locate(("kind",))))
        else:
            notes.append(Diagnostic(Severity.NOTICE, "TJC-INPUT-SKIPPED",
                                    f"skipped {kind} ({api}): not a Kubeflow Trainer kind")
                         .at(doc.locate()))
    return trainjobs, runtimes, notes


def runtime_table(user: Sequence[Document], builtin: Sequence[Document]
                  ) -> tuple[dict[RuntimeKey, Document], list[Diagnostic]]:
    """User runtimes first; a user runtime named like a built-in replaces it, with a notice."""
    table: dict[RuntimeKey, Document] = {}
    notes: list[Diagnostic] = []
    for doc in builtin:
        table[runtime_key(doc.data)] = doc
    for doc in user:
        key = runtime_key(doc.data)
        previous = table.get(key)
        if previous is not None and previous.source.name.startswith("<builtin>"):
            notes.append(Diagnostic(Severity.NOTICE, "TJC-RUNTIME-OVERRIDE",
                                    f"{key.kind} {key.name} overrides the built-in runtime",
                                    ("metadata", "name")).at(doc.locate(("metadata", "name"))))
        elif previous is not None:
            notes.append(error("TJC-RUNTIME-DUPLICATE",
                               f"{key.kind} {key.name} is defined twice (also at "
                               f"{previous.locate()})", ("metadata", "name"))
                         .at(doc.locate(("metadata", "name"))))
            continue
        table[key] = doc
    return table, notes


def render_documents(docs: Sequence[Document], builtin: Sequence[Document] = ()) -> RenderResult:
    """Compile every TrainJob among `docs` against `docs`' runtimes and the built-ins."""
    trainjobs, user_runtimes, notes = classify(docs)
    table, runtime_notes = runtime_table(user_runtimes, builtin)
    jobs = [render_one(tj, table) for tj in trainjobs]
    return RenderResult(jobs, notes + runtime_notes)


def render_one(tj: Document, table: dict[RuntimeKey, Document]) -> JobResult:
    """Resolve and compile one TrainJob, with located diagnostics."""
    result = JobResult(tj)
    raw_meta = tj.data.get("metadata")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    ref = ObjectRef("TrainJob", str(meta.get("name", "")), str(meta.get("namespace") or ""))
    key = wanted_key(apply_defaults("TrainJob", {"spec": tj.data.get("spec") or {},
                                                 "metadata": meta}))
    if isinstance(key, Diagnostic):
        result.diagnostics.append(replace(key, obj=ref).at(tj.locate(key.path)))
        return result
    runtime = table.get(key)
    if runtime is None:
        missing = not_found(key)
        result.diagnostics.append(replace(missing, obj=ref).at(tj.locate(missing.path)))
        return result
    compiled = compile_trainjob(tj.data, runtime.data)
    result.objects = list(compiled.objects)
    for diag in compiled.diagnostics:
        doc = runtime if diag.subject == "runtime" else tj
        result.diagnostics.append(diag.at(doc.locate(diag.path)))
    return result
