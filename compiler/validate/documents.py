"""The validate application: input sources in, located diagnostics out, for every document.

For each TrainJob and runtime: the structural pass, CRD defaulting, the JSON Schema and CEL
layers (CEL transition rules only against the previous version of the same object, from
`--against`), then upstream's webhook rules and the quirk warnings. A runtime is checked once,
however many TrainJobs use it. Everything wrong is reported in one run. Called by `tjc validate`
and, per TrainJob, by the render application before it compiles. No I/O beyond `Document`.
"""

from __future__ import annotations

import hashlib
import json
import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from compiler.common.diagnostics import (
    Diagnostic,
    Location,
    ObjectRef,
    Severity,
    error,
    refused,
)
from compiler.common.jsondata import Obj
from compiler.core import admission, webhook
from compiler.core.compile import CompileResult, compile_defaulted
from compiler.core.resolve import (
    ObjectKey,
    RuntimeKey,
    object_key,
    object_ref,
    runtime_key,
    wanted_key,
)
from compiler.io.inputs import JOBSET, RuntimeEntry, classified, runtime_table
from compiler.io.loader import Document, Source, SourceFiles, iter_source
from compiler.io.placement import Placement, in_namespace
from compiler.kube.podspec import refusals as podspec
from compiler.validate import quirks

if TYPE_CHECKING:
    from compiler.policy.check import PolicyChecker



@dataclass
class Checked:
    """A document after the structural pass and defaulting, with its own diagnostics."""

    doc: Document
    data: Obj
    diagnostics: list[Diagnostic] = field(default_factory=list)


def check_document(doc: Document, old: Obj | None = None, fields: str = "strict") -> Checked:
    """Structural pass, defaults, JSON Schema and CEL for one document (unknown fields as
    kubectl's field validation `fields` has them)."""
    data, diagnostics = admission.check_object(str(doc.data.get("kind")), doc.data, old, fields)
    return Checked(doc, data, diagnostics)


def _well_typed(checked: Checked) -> Obj:
    """The document without its wrongly typed values (`admission.well_typed`)."""
    return admission.well_typed(checked.data, checked.diagnostics)


def _elsewhere(key: RuntimeKey, table: dict[RuntimeKey, RuntimeEntry]) -> list[Diagnostic]:
    """A notice when a TrainingRuntime of that name exists only in other namespaces."""
    others = sorted(k.namespace for k in table if (k.kind, k.name) == (key.kind, key.name))
    if key.kind != "TrainingRuntime" or not others:
        return []
    return [Diagnostic(Severity.NOTICE, "TJC-RUNTIME-OTHER-NAMESPACE",
                       f"a TrainingRuntime {key.name} exists in namespace {', '.join(others)}, "
                       f"but a TrainJob can use only a TrainingRuntime of its own namespace "
                       f"({key.namespace}) or a ClusterTrainingRuntime", ("spec", "runtimeRef"))]


def _locate(diagnostics: Sequence[Diagnostic], checked: Checked, runtime: Document | None,
            obj: ObjectRef) -> list[Diagnostic]:
    out = []
    for d in diagnostics:
        where = runtime if d.subject == "runtime" and runtime is not None else checked.doc
        out.append(replace(d, obj=d.obj or obj).at(where.locate(d.path)))
    return sorted(out, key=lambda d: (d.locations[0], d.rule, d.message))


class Validator:
    """Validates documents against a runtime table, checking each runtime once."""

    def __init__(self, table: dict[RuntimeKey, RuntimeEntry],
                 previous: dict[ObjectKey, Obj] | None = None,
                 policies: PolicyChecker | None = None, fields: str = "strict") -> None:
        self.table = table
        self.previous = previous or {}
        self.policies = policies
        self.fields = fields  # kubectl's field validation of unknown fields
        self.runtimes: dict[tuple[str, int, tuple[str | int, ...]], Checked] = {}
        self.met: list[Met] = []  # the TrainJobs validated, for `Names` (taken by the caller)

    def runtime(self, doc: Document) -> Checked:
        """A runtime document, checked (structure, schema, CEL, webhook) once."""
        where = (doc.source.name, doc.index, doc.base)
        checked = self.runtimes.get(where)
        if checked is None:
            old = self.previous.get(object_key(doc.data))
            checked = check_document(doc, old, self.fields)
            typed = _well_typed(checked)
            checked.diagnostics += webhook.validate_runtime(typed, old=old)
            checked.diagnostics += podspec.refusals(doc.kind, typed)
            checked.diagnostics = _locate(checked.diagnostics, checked, None, object_ref(doc.data))
            if self.policies is not None:
                checked.diagnostics += self.policies.document(doc, _well_typed(checked))
            self.runtimes[where] = checked
        return checked

    def trainjob(self, doc: Document) -> list[Diagnostic]:
        """Every diagnostic of one TrainJob, located in it or in its runtime."""
        return self.check_trainjob(doc)[0]

    def check_trainjob(self, doc: Document) -> tuple[list[Diagnostic], Obj]:
        """Every diagnostic of one TrainJob, and the TrainJob after the structural pass and
        defaulting (what the compile starts from)."""
        old = self.previous.get(object_key(doc.data))
        checked = check_document(doc, old, self.fields)
        key = wanted_key(checked.data)
        if isinstance(key, Diagnostic):
            found = _locate([*checked.diagnostics, key], checked, None, object_ref(doc.data))
            return found, checked.data
        entry = self.table.get(key)
        rt = self.runtime(entry.doc) if entry is not None else None
        found = list(checked.diagnostics)
        if entry is None:
            found += _elsewhere(key, self.table)
        if rt is not None and refused(rt.diagnostics):
            found.append(error("TJC-RUNTIME-INVALID", f"{key.kind} {key.name} has errors (reported "
                               "at the runtime); a cluster would not hold it, so this TrainJob "
                               "cannot run", ("spec", "runtimeRef")))
        runtime = _well_typed(rt) if rt is not None else None
        trainjob = _well_typed(checked)
        found += webhook.validate_trainjob(trainjob, runtime, old=old)
        found += podspec.refusals("TrainJob", trainjob)
        if runtime is not None:
            found += quirks.check(trainjob, runtime)
        located = _locate(found, checked, entry.doc if entry else None, object_ref(doc.data))
        if self.policies is not None:
            located += self.policies.document(doc, trainjob)
        return located, checked.data

    def jobset_document(self, doc: Document) -> list[Diagnostic]:
        """A JobSet written in the inputs: the packs' JobSet rules, as a compiled JobSet meets
        them (without policies, only the notice that tjc does not check it otherwise)."""
        if self.policies is None:
            return [skipped_jobset(doc)]
        return self.policies.document(doc, doc.data)

    def compiled(self, doc: Document, trainjob: Obj, entry: RuntimeEntry,
                 result: CompileResult) -> list[Diagnostic]:
        """Policy diagnostics of the JobSet compiled from a valid TrainJob and its runtime."""
        jobset = next((o for o in result.objects if o.get("kind") == "JobSet"), None)
        if self.policies is None or jobset is None or result.origins is None:
            return []
        return self.policies.jobset(doc, trainjob, entry.doc, jobset, result.origins)

    def trainjob_with_policies(self, doc: Document) -> list[Diagnostic]:
        """`trainjob`, then (when valid) the compile's refusals (what render, the controller
        and the library refuse too) and the policies of the JobSet it compiles to."""
        found, data = self.check_trainjob(doc)
        entry = self._entry(found, data)
        if entry is None:
            return found
        # the whole JobSet: what the API server refuses in its Pods reads the env, ports and
        # mounts the plugins write
        compiled = compile_defaulted(data, entry.get())
        refusals = self._refusals(doc, entry, compiled)
        if not compiled.objects:  # (kept with errors about the Pods only, as render keeps them)
            return found + refusals
        return found + refusals + self.compiled(doc, data, entry, compiled)

    def _entry(self, found: list[Diagnostic], data: Obj) -> RuntimeEntry | None:
        """The runtime of a TrainJob that passed admission, to compile it with."""
        if refused(found):
            return None
        key = wanted_key(data)
        return None if isinstance(key, Diagnostic) else self.table.get(key)

    @staticmethod
    def _refusals(doc: Document, entry: RuntimeEntry, compiled: CompileResult
                  ) -> list[Diagnostic]:
        """The compile's errors (a hostfile too large, a JobSet the cluster could never run,
        ...), located as render locates them; its warnings are the quirks' already."""
        return [d.at((entry.doc if d.subject == "runtime" else doc).locate(d.path))
                for d in compiled.diagnostics if d.severity is Severity.ERROR]


def skipped_jobset(doc: Document) -> Diagnostic:
    """The notice for a JobSet in the inputs when no policy checks it."""
    return Diagnostic(Severity.NOTICE, "TJC-INPUT-SKIPPED", "skipped JobSet "
                      f"({doc.data.get('apiVersion')}): not a Kubeflow Trainer kind").at(
        doc.locate())


def validate_stream(sources: Iterable[Source], builtin: Sequence[Document] = (),
                    previous: Sequence[Source] = (),
                    policies: PolicyChecker | None = None, *,
                    placement: Placement | None = None) -> Iterator[Diagnostic]:
    """Every diagnostic of every input, in input order; runtimes' own problems once each.
    With `policies`, each valid TrainJob is also compiled and its JobSet checked.
    `placement`: the namespace the inputs are applied into."""
    validator, notes = prepare(sources, builtin, previous, policies, placement=placement)
    yield from notes
    names, locate = Names(), locate_in(sources)
    for source in sources:
        yield from _once(policies, validate_source(validator, source, placement))
        yield from names.meet(validator.met, locate)
        validator.met.clear()


Met = tuple[int, str, str, str, int, tuple[str | int, ...]]
"""A TrainJob met: the digest of its namespace (or folder) and name, its namespace and name,
and where it is (source name, document index, base path) to locate it only when needed."""


class Names:
    """The TrainJobs of one run by namespace and name, in input order: a second one with the
    same pair is an error (applied, one would replace the other; `render --output-dir` keeps
    only the first). One without a namespace (and not placed in one: `--namespace`) gets it
    where it is applied (a GitOps application's folder), so it meets only those of its own
    folder. A worker reports what it met (`Validator.met`); the parent meets them. Only a
    64-bit digest per TrainJob is kept (`Digests`), so memory stays flat in the number of
    TrainJobs; the second one is located when met."""

    def __init__(self) -> None:
        self.seen = Digests()

    @staticmethod
    def key(doc: Document) -> Met | None:
        """What `meet` needs of a TrainJob, or None without a name."""
        meta = doc.data.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not name:
            return None
        namespace = meta.get("namespace") if isinstance(meta, dict) else None
        namespace = namespace if isinstance(namespace, str) else ""
        scope = "" if namespace else os.path.dirname(doc.source.name)
        digest = int.from_bytes(hashlib.blake2b(
            "\0".join((namespace, name, scope)).encode("utf-8", "surrogatepass"),
            digest_size=8).digest(), "big") or 1
        return digest, namespace, name, doc.source.name, doc.index, tuple(doc.base)

    def meet(self, met: Iterable[Met], locate: Callable[[Met], Location]) -> list[Diagnostic]:
        """The errors for the TrainJobs among `met` whose pair came before."""
        out: list[Diagnostic] = []
        for found in met:
            if self.seen.add(found[0]):
                continue
            namespace, name = found[1], found[2]
            shown = f"{namespace}/{name}" if namespace else name
            out.append(Diagnostic(
                Severity.ERROR, "TJC-TRAINJOB-DUPLICATE", f"a second TrainJob {shown} in the "
                "inputs; applied, one would replace the other", ("metadata", "name"),
                ObjectRef("TrainJob", name, namespace)).at(locate(found)))
        return out


class Digests:
    """A set of nonzero 64-bit digests in one array (open addressing, at most half full):
    16 bytes per member at most, where a Python set of ints takes about 60."""

    def __init__(self) -> None:
        self.slots = array("Q", bytes(8 * 1024))
        self.count = 0

    def add(self, digest: int) -> bool:
        """Add a digest; False when it was there already."""
        if 2 * (self.count + 1) > len(self.slots):
            self._grow()
        slots, mask = self.slots, len(self.slots) - 1
        i = digest & mask
        while slots[i]:
            if slots[i] == digest:
                return False
            i = (i + 1) & mask
        slots[i] = digest
        self.count += 1
        return True

    def _grow(self) -> None:
        old = self.slots
        self.slots = array("Q", bytes(16 * len(old)))
        self.count = 0
        for digest in old:
            if digest:
                self.add(digest)


def locate_in(sources: Iterable[Source]) -> Callable[[Met], Location]:
    """`Names.meet`'s locator over the run's sources: the TrainJob's metadata.name (input
    files are read again by name, one, not all: `SourceFiles` keeps none)."""
    by_name: dict[str, Source] = {}

    def source_of(name: str) -> Source:
        if isinstance(sources, SourceFiles):
            return sources[sources.index(name)]
        if not by_name:
            by_name.update((source.name, source) for source in sources)
        return by_name[name]

    def locate(found: Met) -> Location:
        return Document({}, source_of(found[3]), found[4], found[5]).locate(("metadata", "name"))

    return locate


def prepare(sources: Iterable[Source], builtin: Sequence[Document] = (),
            previous: Sequence[Source] = (), policies: PolicyChecker | None = None, *,
            placement: Placement | None = None) -> tuple[Validator, list[Diagnostic]]:
    """The first pass: a validator over the runtimes of the inputs and the built-in ones,
    with the previous versions (all as placed, see `validate_source`); and the
    problems found on the way (duplicate runtimes, unreadable previous versions), to report
    first."""
    table, notes = runtime_table(sources, builtin, placement)
    old, problems = previous_versions(previous, placement)
    return Validator(table, old, policies), notes + problems


def validate_source(validator: Validator, source: Source, placement: Placement | None = None
                    ) -> list[Diagnostic]:
    """Every diagnostic of one source, in order, before policy diagnostics already reported
    are dropped (`PolicyChecker.once`, which the caller applies in input order). With a
    `placement` (the namespace the inputs are applied into), each TrainJob and TrainingRuntime
    is checked as placed there (`compiler.io.placement`): the validator's runtime table must
    have been built with the same placement."""
    return [d for item in classified([source], placement)
            for d in _validate_item(validator, item)]


def _validate_item(validator: Validator, item: tuple[Document, str] | Diagnostic
                   ) -> list[Diagnostic]:
    if isinstance(item, Diagnostic):
        return [item]
    if item[1] == JOBSET:
        return validator.jobset_document(item[0])
    if item[1] == "TrainJob":
        met = Names.key(item[0])
        if met is not None:
            validator.met.append(met)
        return validator.trainjob_with_policies(item[0])
    if runtime_key(item[0].data) in validator.table:
        return validator.runtime(item[0]).diagnostics
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
                       policies: PolicyChecker | None = None) -> list[Diagnostic]:
    """`tjc validate` for documents already in memory (a controller's or admission hook's
    objects): every diagnostic of each TrainJob and runtime in `documents`, resolving
    runtimeRefs against them, `runtimes` and (unless `builtin=False`) the built-in runtimes;
    `previous` holds the objects' previous versions (transition rules). Each diagnostic names
    its object and field path; its location is `<document N>:line:col` in the document
    printed as indented JSON."""
    sources = [_memory(f"<document {i}>", doc) for i, doc in enumerate(documents)]
    extra = [d for i, doc in enumerate(runtimes) for d in iter_source(_memory(
        f"<runtime {i}>", doc)) if isinstance(d, Document)]
    if builtin:
        from compiler.io.builtin import builtin_runtimes

        extra = [*builtin_runtimes(), *extra]
    old = [_memory(f"<previous {i}>", doc) for i, doc in enumerate(previous)]
    return list(validate_stream(sources, extra, old, policies))


def _memory(name: str, doc: Mapping[str, Any]) -> Source:
    return Source(name, json.dumps(doc, indent=2, default=str))
