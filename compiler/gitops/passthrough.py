"""Transformer mode: every input resource comes out, in input order, each TrainJob replaced by
(or, with `keep_trainjobs`, followed by) the objects Kubeflow Trainer would create for it.

This is what a render step inside a pipeline needs (`kustomize build . | tjc render
--passthrough -`, a Helm post-renderer, the KRM function): the ConfigMaps, Namespaces and RBAC
of the same application go through untouched, runtimes too (the cluster needs them as well).
A TrainJob with errors yields no objects (the caller fails). With a `placement` (the
namespace the stream is applied into), TrainJobs and TrainingRuntimes are compiled as placed
there (`compiler.io.placement`), and pass through as they came. Pure: sources in, items out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from compiler.common.diagnostics import Diagnostic, Location, Severity
from compiler.common.records import dataclass
from compiler.core.context import CompileOptions
from compiler.io import toolfiles
from compiler.io.inputs import Namespaces, is_jobset, kind_of, runtime_table
from compiler.io.loader import Document, Source, iter_source
from compiler.io.placement import Placement, placed
from compiler.pipeline.names import Met, Names
from compiler.pipeline.session import Session
from compiler.render.pipeline import render_one

if TYPE_CHECKING:
    from compiler.policy.check import PolicyChecker

SKIPPED = "TJC-INPUT-SKIPPED"


@dataclass
class Item:
    """One output resource and the diagnostics that came with it (about its input)."""

    obj: dict[str, Any] | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    source: Document | None = None


@dataclass
class PassOptions:
    """How the transformer treats TrainJobs."""

    keep_trainjobs: bool = False
    validate: bool = True
    compile: CompileOptions | None = None
    policies: PolicyChecker | None = None
    fields: str = "strict"  # kubectl's field validation of unknown fields
    placement: Placement | None = None  # the namespace the stream is applied into
    jobset: str | None = None  # the cluster's JobSet release (default: the Trainer release's)


def transform(sources: Sequence[Source], builtin: Sequence[Document] = (),
              opts: PassOptions | None = None) -> Iterator[Item]:
    """Each input resource in input order, TrainJobs expanded; loose diagnostics (broken
    documents, the runtimes' own problems) come as items without an object."""
    opts = opts or PassOptions()
    namespaces = Namespaces()
    table, notes = runtime_table(sources, builtin, opts.placement, namespaces)
    if opts.policies is not None:
        opts.policies.use_namespaces(namespaces.labels)
    if notes:
        yield Item(None, notes)
    release = (opts.compile or CompileOptions()).release
    session = Session(table, policies=opts.policies, fields=opts.fields, release=release,
                      jobset=opts.jobset)
    names = Names()
    for source in sources:
        tool_file = toolfiles.skipped(source)
        if tool_file is not None:
            yield Item(None, [tool_file])
            continue
        for doc in iter_source(source):
            if isinstance(doc, Diagnostic):
                yield Item(None, [doc])
                continue
            kind = kind_of(doc)
            if is_jobset(doc):  # passed through; the packs' JobSet rules still apply
                found = session.jobset_document(doc) if opts.validate else []
                yield Item(doc.data, [d for d in found if d.rule != "TJC-INPUT-SKIPPED"], doc)
                continue
            if isinstance(kind, Diagnostic):
                yield _other(doc, kind)
                continue
            here = placed(doc, opts.placement)
            if isinstance(here, Diagnostic):  # of another namespace: an error, as kubectl's
                yield from _refused(doc, kind, here, opts)
            elif kind == "TrainJob":
                met = Names.key(here)
                again = names.meet([met], _at_name(here)) if met is not None else []
                if again:  # a second TrainJob of one namespace and name: no objects
                    yield Item(None, again, doc)
                else:
                    yield from _trainjob(doc, here, session, opts)
            else:
                found = session.runtime(here).diagnostics if opts.validate else []
                if opts.policies is not None:
                    found = opts.policies.once(found)
                yield Item(doc.data, found, doc)


def _at_name(doc: Document) -> Callable[[Met], Location]:
    """Where a TrainJob's name is (for `Names.meet`)."""
    return lambda _: doc.locate(("metadata", "name"))


def _other(doc: Document, why: Diagnostic) -> Item:
    """A resource tjc does not own passes through silently; a broken one is reported."""
    if why.rule == SKIPPED or why.severity is not Severity.ERROR:
        return Item(doc.data, [], doc)
    return Item(None, [why], doc)


def _refused(doc: Document, kind: str, why: Diagnostic, opts: PassOptions) -> Iterator[Item]:
    """A document placed in another namespace than its own passes as one with errors does:
    a runtime as it came, a TrainJob only when kept, and no objects for it."""
    if kind != "TrainJob":
        yield Item(doc.data, [why], doc)
        return
    if opts.keep_trainjobs:
        yield Item(doc.data, [], doc)
    yield Item(None, [why], doc)


def _trainjob(doc: Document, here: Document, session: Session, opts: PassOptions
              ) -> Iterator[Item]:
    """The TrainJob as it came (`keep_trainjobs`), then the objects of it as placed (`here`)."""
    result = render_one(here, session, opts.compile, validate=opts.validate)
    if opts.policies is not None:
        result.diagnostics = opts.policies.once(result.diagnostics)
    if opts.keep_trainjobs:
        yield Item(doc.data, [], doc)
    if not result.objects:
        yield Item(None, result.diagnostics, doc)
        return
    first, *rest = result.objects
    yield Item(first, result.diagnostics, doc)
    for obj in rest:
        yield Item(obj, [], doc)
