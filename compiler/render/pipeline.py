"""The render application: input sources in, one result per TrainJob out.

Two passes: the first collects the runtimes (`compiler.io.inputs`); the second streams each
source's documents and, for every TrainJob as it comes, validates it (`compiler.validate.documents`:
an invalid TrainJob gets no objects) and compiles it, so memory stays flat however many
TrainJobs a stream holds. With a `Placement` (the namespace the outputs are applied into),
every TrainJob and TrainingRuntime is first placed there, as the API server would store it
(`compiler.io.placement`). Every diagnostic's field path becomes the `file:line:col` of the
document it is about. Called by the CLI; also the library API for whole folders
(`render_stream`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from compiler.common.diagnostics import Diagnostic, refused
from compiler.core.compile import compile_defaulted, compile_trainjob
from compiler.core.context import CompileOptions
from compiler.core.resolve import RuntimeKey, not_found, wanted_key
from compiler.io.inputs import JOBSET, RuntimeEntry, classified, runtime_table
from compiler.io.loader import Document, Source
from compiler.io.placement import Placement
from compiler.kube.defaults import apply_defaults
from compiler.render import named
from compiler.validate.documents import Names, Validator, skipped_jobset

if TYPE_CHECKING:
    from compiler.policy.check import PolicyChecker


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


def render_stream(sources: Iterable[Source], builtin: Sequence[Document] = (),
                  options: CompileOptions | None = None, *, validate: bool = True,
                  policies: PolicyChecker | None = None, placement: Placement | None = None
                  ) -> Iterator[JobResult | Diagnostic]:
    """Results and loose diagnostics in input order, one TrainJob at a time; the runtimes of
    the inputs report their own problems once. `validate=False` compiles what the cluster
    would reject too, as the controller does when the admission webhook is bypassed.
    `placement`: the namespace the inputs are applied into."""
    table, notes = runtime_table(sources, builtin, placement)
    yield from notes
    validator = Validator(table, policies=policies) if validate else None
    names = Names()
    for source in sources:
        for item in render_source(source, table, validator, options, placement):
            if isinstance(item, JobResult):
                _meet(names, item)
            if policies is None:
                yield item
            elif isinstance(item, JobResult):
                item.diagnostics = policies.once(item.diagnostics)
                yield item
            else:
                yield from policies.once([item])


def _meet(names: Names, result: JobResult) -> None:
    """A second TrainJob of one namespace and name gets no objects, as in validate."""
    met = Names.key(result.trainjob)
    doc = result.trainjob
    again = names.meet([met], lambda _: doc.locate(("metadata", "name"))) \
        if met is not None else []
    if again:
        result.objects = []
        result.diagnostics += again


def render_source(source: Source, table: dict[RuntimeKey, RuntimeEntry],
                  validator: Validator | None, options: CompileOptions | None = None,
                  placement: Placement | None = None) -> Iterator[JobResult | Diagnostic]:
    """`render_stream` for one source of the inputs whose runtimes `table` holds (built with
    the same `placement`), before policy diagnostics already reported are dropped
    (`PolicyChecker.once`, which the caller applies in input order)."""
    for item in classified([source], placement):
        if isinstance(item, Diagnostic):
            yield item
        elif item[1] == JOBSET:  # skipped, but its policies still count
            yield from validator.jobset_document(item[0]) if validator is not None \
                else [skipped_jobset(item[0])]
        elif item[1] == "TrainJob":
            yield render_one(item[0], table, validator, options)
        elif validator is not None:
            yield from validator.runtime(item[0]).diagnostics


def _defaulted_ref(data: dict[str, Any]) -> dict[str, Any]:
    """Just enough of a TrainJob, defaulted, to resolve its runtime."""
    meta, spec = data.get("metadata"), data.get("spec")
    ref = spec.get("runtimeRef") if isinstance(spec, dict) else None
    return apply_defaults("TrainJob", {"metadata": meta if isinstance(meta, dict) else {},
                                       "spec": {"runtimeRef": ref if isinstance(ref, dict)
                                                else {}}})


def render_one(tj: Document, table: dict[RuntimeKey, RuntimeEntry],
               validator: Validator | None, options: CompileOptions | None = None) -> JobResult:
    """Validate, then (when valid) resolve and compile one TrainJob, with located diagnostics.
    A policy deny is an error but keeps the objects: they are what the cluster would create;
    the policy decides whether the change may go there (the exit code). With `name_hash`, the
    TrainJob is rendered again as if named `<name>-<hash>` (`compiler.render.named`)."""
    result = _render_one(tj, table, validator, options)
    tag = named.suffix(result.objects) if options is not None and options.name_hash else None
    if tag is None:
        return result
    again = named.renamed(tj, tag)
    second = _render_one(again, table, validator, options)
    return JobResult(tj, second.objects, named.as_original(second.diagnostics, tj, again))


def _render_one(tj: Document, table: dict[RuntimeKey, RuntimeEntry],
                validator: Validator | None, options: CompileOptions | None) -> JobResult:
    result = JobResult(tj)
    checked: dict[str, Any] | None = None
    if validator is not None:
        result.diagnostics, checked = validator.check_trainjob(tj)
    if refused(result.diagnostics):
        return result
    key = wanted_key(checked if checked is not None else _defaulted_ref(tj.data))
    if isinstance(key, Diagnostic):
        result.diagnostics.append(key.at(tj.locate(key.path)))
        return result
    entry = table.get(key)
    if entry is None:
        result.diagnostics.append(not_found(key).at(tj.locate(("spec", "runtimeRef", "name"))))
        return result
    compiled = compile_trainjob(tj.data, entry.get(), options=options, validate=False) \
        if checked is None \
        else compile_defaulted(checked, entry.get(), options=options)
    result.objects = list(compiled.objects)
    seen = {(d.rule, d.field_path, d.locations) for d in result.diagnostics}
    for diag in compiled.diagnostics:
        doc = entry.doc if diag.subject == "runtime" else tj
        located = diag.at(doc.locate(diag.path))
        if (located.rule, located.field_path, located.locations) not in seen:
            result.diagnostics.append(located)
    if validator is not None and checked is not None and result.objects:
        result.diagnostics += validator.compiled(tj, checked, entry, compiled)
    return result
