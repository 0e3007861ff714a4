"""The render application: input sources in, one result per TrainJob out.

Two passes: the first collects the runtimes (`compiler.io.inputs`); the second streams each
source's documents and runs every TrainJob as it comes through the one pipeline
(`compiler.pipeline.session`: admission, the compile, the policy packs; a TrainJob the cluster
would refuse gets no objects), so memory stays flat however many
TrainJobs a stream holds. With a `Placement` (the namespace the outputs are applied into),
every TrainJob and TrainingRuntime is first placed there, as the API server would store it
(`compiler.io.placement`). Every diagnostic's field path becomes the `file:line:col` of the
document it is about. Called by the CLI; also the library API for whole folders
(`render_stream`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from compiler.common.diagnostics import Diagnostic
from compiler.core.context import CompileOptions
from compiler.core.release import DEFAULT as DEFAULT_RELEASE
from compiler.io.inputs import JOBSET, Namespaces, classified, runtime_table
from compiler.io.loader import Document, Source
from compiler.io.placement import Placement
from compiler.pipeline.names import Names
from compiler.pipeline.session import JobResult, Session, skipped_jobset
from compiler.render import named

if TYPE_CHECKING:
    from compiler.policy.check import PolicyChecker


def render_stream(sources: Iterable[Source], builtin: Sequence[Document] = (),
                  options: CompileOptions | None = None, *, validate: bool = True,
                  policies: PolicyChecker | None = None, placement: Placement | None = None
                  ) -> Iterator[JobResult | Diagnostic]:
    """Results and loose diagnostics in input order, one TrainJob at a time; the runtimes of
    the inputs report their own problems once. `validate=False` compiles what the cluster
    would reject too, as the controller does when the admission webhook is bypassed.
    `placement`: the namespace the inputs are applied into. The Kubeflow Trainer release is
    `options.trainer_version`'s (`builtin` should be its built-in runtimes:
    `compiler.io.builtin.builtin_runtimes(version)`)."""
    namespaces = Namespaces()
    table, notes = runtime_table(sources, builtin, placement, namespaces)
    if policies is not None:
        policies.use_namespaces(namespaces.labels)
    yield from notes
    session = Session(table, policies=policies,
                      fields=options.field_validation if options is not None else "strict",
                      release=options.release if options is not None else DEFAULT_RELEASE)
    names = Names()
    for source in sources:
        for item in render_source(source, session, options, placement, validate=validate):
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


def render_source(source: Source, session: Session, options: CompileOptions | None = None,
                  placement: Placement | None = None, *, validate: bool = True
                  ) -> Iterator[JobResult | Diagnostic]:
    """`render_stream` for one source of the inputs whose runtimes the session's table holds
    (built with the same `placement`), before policy diagnostics already reported are dropped
    (`PolicyChecker.once`, which the caller applies in input order). `validate=False`: no
    admission and no policies (`tjc render --no-validate`)."""
    for item in classified([source], placement):
        if isinstance(item, Diagnostic):
            yield item
        elif item[1] == JOBSET:  # skipped, but its policies still count
            yield from session.jobset_document(item[0]) if validate \
                else [skipped_jobset(item[0])]
        elif item[1] == "TrainJob":
            yield render_one(item[0], session, options, validate=validate)
        elif validate:
            yield from session.runtime(item[0]).diagnostics


def render_one(tj: Document, session: Session, options: CompileOptions | None = None, *,
               validate: bool = True) -> JobResult:
    """The pipeline for one TrainJob (`Session.process`). A policy deny is an error but keeps
    the objects: they are what the cluster would create; the policy decides whether the change
    may go there (the exit code). With `name_hash`, the TrainJob is rendered again as if named
    `<name>-<hash>` (`compiler.render.named`)."""
    result = session.process(tj, options, validate=validate)
    tag = named.suffix(result.objects) if options is not None and options.name_hash else None
    if tag is None:
        return result
    again = named.renamed(tj, tag)
    second = session.process(again, options, validate=validate)
    return JobResult(tj, second.objects, named.as_original(second.diagnostics, tj, again))
