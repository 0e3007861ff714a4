"""The validate application: input sources in, located diagnostics out, for every document.

Each TrainJob goes through the one pipeline (`compiler.pipeline.session`: admission, quirks,
the compile, the policy packs, located), whose objects validate drops; each runtime is checked
once, however many TrainJobs use it; a JobSet in the inputs meets the packs' JobSet rules.
Everything wrong is reported in one run. Called by `tjc validate` and the library
(`validate_documents`). No I/O beyond `Document`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from compiler.common.diagnostics import Diagnostic
from compiler.common.jsondata import Obj
from compiler.core.release import DEFAULT as DEFAULT_RELEASE
from compiler.core.release import Release, release_of
from compiler.core.resolve import ObjectKey, object_key, runtime_key
from compiler.io.inputs import JOBSET, Namespaces, classified, runtime_table
from compiler.io.loader import Document, Source, iter_source
from compiler.io.placement import Placement, in_namespace
from compiler.kube.releases import DEFAULT as DEFAULT_VERSION
from compiler.pipeline.names import Met, Names, locate_in
from compiler.pipeline.session import Session

if TYPE_CHECKING:
    from compiler.policy.check import PolicyChecker


def validate_stream(sources: Iterable[Source], builtin: Sequence[Document] = (),
                    previous: Sequence[Source] = (),
                    policies: PolicyChecker | None = None, *,
                    placement: Placement | None = None,
                    release: Release = DEFAULT_RELEASE) -> Iterator[Diagnostic]:
    """Every diagnostic of every input, in input order; runtimes' own problems once each.
    With `policies`, each valid TrainJob is also compiled and its JobSet checked.
    `placement`: the namespace the inputs are applied into; `release`: the Kubeflow Trainer
    release whose admission is reproduced (`builtin` should be its built-in runtimes)."""
    session, notes = prepare(sources, builtin, previous, policies, placement=placement,
                             release=release)
    yield from notes
    names, locate = Names(), locate_in(sources)
    for source in sources:
        met: list[Met] = []
        yield from _once(policies, validate_source(session, source, placement, met))
        yield from names.meet(met, locate)


def prepare(sources: Iterable[Source], builtin: Sequence[Document] = (),
            previous: Sequence[Source] = (), policies: PolicyChecker | None = None, *,
            placement: Placement | None = None, release: Release = DEFAULT_RELEASE
            ) -> tuple[Session, list[Diagnostic]]:
    """The first pass: a pipeline session over the runtimes of the inputs and the built-in ones,
    with the previous versions (all as placed, see `validate_source`); and the
    problems found on the way (duplicate runtimes, unreadable previous versions), to report
    first. The policies learn the labels of the inputs' Namespace objects."""
    namespaces = Namespaces()
    table, notes = runtime_table(sources, builtin, placement, namespaces)
    if policies is not None:
        policies.use_namespaces(namespaces.labels)
    old, problems = previous_versions(previous, placement)
    return Session(table, old, policies, release=release), notes + problems


def validate_source(session: Session, source: Source, placement: Placement | None = None,
                    met: list[Met] | None = None) -> list[Diagnostic]:
    """Every diagnostic of one source, in order, before policy diagnostics already reported
    are dropped (`PolicyChecker.once`, which the caller applies in input order). With a
    `placement` (the namespace the inputs are applied into), each TrainJob and TrainingRuntime
    is checked as placed there (`compiler.io.placement`): the session's runtime table must
    have been built with the same placement. The TrainJobs met go to `met` (for `Names`)."""
    met = [] if met is None else met
    return [d for item in classified([source], placement)
            for d in _validate_item(session, item, met)]


def _validate_item(session: Session, item: tuple[Document, str] | Diagnostic,
                   met: list[Met]) -> list[Diagnostic]:
    if isinstance(item, Diagnostic):
        return [item]
    if item[1] == JOBSET:
        return session.jobset_document(item[0])
    if item[1] == "TrainJob":
        key = Names.key(item[0])
        if key is not None:
            met.append(key)
        return session.process(item[0]).diagnostics
    if runtime_key(item[0].data) in session.table:
        return session.runtime(item[0]).diagnostics
    return []


def _once(policies: PolicyChecker | None, found: list[Diagnostic]) -> list[Diagnostic]:
    return found if policies is None else policies.once(found)


def previous_versions(sources: Sequence[Source], placement: Placement | None = None
                      ) -> tuple[dict[ObjectKey, Obj], list[Diagnostic]]:
    """The previous versions by object (one without a namespace in the placement's, as the
    inputs), and the problems reading them (a file that does not parse must not pass for one
    without the objects)."""
    out: dict[ObjectKey, Obj] = {}
    problems: list[Diagnostic] = []
    for source in sources:
        for doc in iter_source(source):
            if isinstance(doc, Document):
                data = in_namespace(doc, placement).data
                out[object_key(data)] = data
            else:
                problems.append(doc)
    return out, problems


def validate_documents(documents: Iterable[Mapping[str, Any]],
                       runtimes: Iterable[Mapping[str, Any]] = (), *,
                       previous: Iterable[Mapping[str, Any]] = (), builtin: bool = True,
                       policies: PolicyChecker | None = None,
                       trainer_version: str = DEFAULT_VERSION) -> list[Diagnostic]:
    """`tjc validate` for documents already in memory (a controller's or admission hook's
    objects): every diagnostic of each TrainJob and runtime in `documents`, resolving
    runtimeRefs against them, `runtimes` and (unless `builtin=False`) the built-in runtimes;
    `previous` holds the objects' previous versions (transition rules); `trainer_version` the
    Kubeflow Trainer release whose admission (and built-in runtimes) is reproduced
    (`compiler.core.release`; UnservedRelease, a ValueError, for another). Each diagnostic
    names its object and field path; its location is `<document N>:line:col` in the document
    printed as indented JSON."""
    release = release_of(trainer_version)
    sources = [_memory(f"<document {i}>", doc) for i, doc in enumerate(documents)]
    extra = [d for i, doc in enumerate(runtimes) for d in iter_source(_memory(
        f"<runtime {i}>", doc)) if isinstance(d, Document)]
    if builtin:
        from compiler.io.builtin import builtin_runtimes

        extra = [*builtin_runtimes(trainer_version), *extra]
    old = [_memory(f"<previous {i}>", doc) for i, doc in enumerate(previous)]
    return list(validate_stream(sources, extra, old, policies, release=release))


def _memory(name: str, doc: Mapping[str, Any]) -> Source:
    return Source(name, json.dumps(doc, indent=2, default=str))
