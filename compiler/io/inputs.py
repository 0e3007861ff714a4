"""Input documents: which kind each is, and the table of runtimes TrainJobs resolve against.

Shared by the render and validate applications. The first pass over the inputs collects the
runtimes (only sources whose text can hold one are parsed, and a stream only up to its last
part that can); user runtimes replace built-in ones with a notice, and a runtime defined twice
is an error. The same pass can collect the labels of
the Namespace objects that carry Pod Security labels (`Namespaces`), which the policies read.
YAML that is not a Kubernetes object (no apiVersion and kind: kustomization or CI workflow
files; Helm templates) is skipped with a notice. With a `Placement` (the namespace the inputs
are applied into), each TrainJob and TrainingRuntime is read as placed there
(`compiler.io.placement`). No I/O beyond `Document`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import field

from compiler.common.diagnostics import Diagnostic, Severity, error
from compiler.common.jsondata import Obj
from compiler.common.records import dataclass
from compiler.core.compile import PreparedRuntime, prepare_runtime
from compiler.core.context import JOBSET_API
from compiler.core.release import DEFAULT as DEFAULT_RELEASE
from compiler.core.release import Release
from compiler.core.resolve import RUNTIME_KINDS, RuntimeKey, runtime_key
from compiler.io import kubectlstream, toolfiles
from compiler.io.loader import Document, Source, SourceFiles, iter_source
from compiler.io.placement import TRAINER_API, Placement, placed

TRAINER_GROUP = "trainer.kubeflow.org/"


@dataclass
class RuntimeEntry:
    """A known runtime and, once a TrainJob needed it, its prepared form."""

    doc: Document
    prepared: PreparedRuntime | None = None

    def get(self, release: Release = DEFAULT_RELEASE) -> PreparedRuntime:
        """Prepare the runtime (for the Kubeflow Trainer `release`) on first use."""
        known = self.prepared
        if known is None or (known.release is not release and known.release != release):
            known = self.prepared = prepare_runtime(self.doc.data, release)
        return known


def kind_of(doc: Document) -> str | Diagnostic:
    """`TrainJob`, a runtime kind, or why the document is skipped or wrong."""
    api, kind = doc.data.get("apiVersion"), doc.data.get("kind")
    if api is None and kind is None and not _object_shaped(doc.data):
        return Diagnostic(Severity.NOTICE, "TJC-INPUT-NOT-KUBERNETES",
                          "skipped: not a Kubernetes object (no apiVersion and kind; e.g. a "
                          "kustomization or workflow file)").at(doc.locate())
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


def _object_shaped(data: Obj) -> bool:
    """Whether a document without apiVersion and kind is still meant as an object: it has
    `metadata` or `spec` (kubectl refuses it: apiVersion and kind not set)."""
    return "metadata" in data or "spec" in data


# A block-style `kind:` line indented under a key (a TrainJob's runtimeRef), and an indented
# apiVersion (a whole document indented, or a fieldRef: then the file is parsed to be sure).
_REF_LINE = re.compile(rb"[ \t]+kind:[ \t]*[\"']?(?:Cluster)?TrainingRuntime[\"']?[ \t]*")
_API_AFTER = re.compile(rb"[ \t]*:")
_MENTION, _API, _BLANK = b"TrainingRuntime", b"apiVersion", b" \t"


def may_hold_runtime(text: bytes) -> bool:
    """Whether a file (its UTF-8 bytes, without a byte order mark) can hold a runtime: it
    names one other than in runtimeRef `kind:` lines, or it is a List, or it has an indented
    apiVersion, or it has a backslash (a double-quoted escape can spell any kind). Only the
    lines naming a runtime or an apiVersion are looked at."""
    if b"\\" in text:
        return True
    at = text.find(_MENTION)
    if at < 0:
        return False
    if b"List" in text:
        return True
    api = text.find(_API)
    while api >= 0:
        start = text.rfind(b"\n", 0, api) + 1  # an indented key: only blanks before it
        if start < api and not text[start:api].strip(_BLANK) and \
                _API_AFTER.match(text, api + len(_API)) is not None:
            return True
        api = text.find(_API, api + len(_API))
    while at >= 0:
        end = text.find(b"\n", at)
        if not _REF_LINE.fullmatch(text, text.rfind(b"\n", 0, at) + 1,
                                   len(text) if end < 0 else end):
            return True
        at = text.find(_MENTION, at + len(_MENTION))
    return False


POD_SECURITY_MARK = b"pod-security.kubernetes.io/"
_POD_SECURITY_PREFIX = POD_SECURITY_MARK.decode()


@dataclass
class Namespaces:
    """The Namespace objects (v1) of the inputs that carry a Pod Security label: all their
    labels by namespace name (a later object of the same name replaces an earlier one, as
    applied), and the files they are in (for a `-j` worker's first pass)."""

    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    files: set[str] = field(default_factory=set)

    def add(self, doc: Document) -> None:
        """Record the document when it is such a Namespace."""
        data = doc.data
        meta = data.get("metadata")
        if data.get("kind") != "Namespace" or data.get("apiVersion") != "v1" \
                or not isinstance(meta, dict) or not isinstance(meta.get("name"), str) \
                or not meta["name"]:
            return
        labels = meta.get("labels")
        labels = {str(k): v for k, v in labels.items() if isinstance(v, str)} \
            if isinstance(labels, dict) else {}
        if any(k.startswith(_POD_SECURITY_PREFIX) for k in labels):
            self.labels[meta["name"]] = labels
            self.files.add(doc.source.name)


def _may_hold_either(text: bytes) -> bool:
    return may_hold_runtime(text) or POD_SECURITY_MARK in text


def runtime_table(sources: Iterable[Source], builtin: Sequence[Document],
                  placement: Placement | None = None, namespaces: Namespaces | None = None
                  ) -> tuple[dict[RuntimeKey, RuntimeEntry], list[Diagnostic]]:
    """Built-ins, then the runtimes of `sources` as placed (one refused there is left out:
    `classified` reports it); a user runtime replaces a built-in one. Files (`SourceFiles`)
    are scanned as bytes and only those that may hold one are decoded. With `namespaces`,
    the same pass records the Namespaces with Pod Security labels there."""
    table = {runtime_key(doc.data): RuntimeEntry(doc) for doc in builtin}
    notes: list[Diagnostic] = []
    test = may_hold_runtime if namespaces is None else _may_hold_either
    candidates = sources.where(test) if isinstance(sources, SourceFiles) else \
        (s for s in sources if test(s.text.encode("utf-8", "surrogatepass")))
    for source in candidates:
        for doc in _through_last_candidate(source, test):
            if not isinstance(doc, Document):
                continue
            if kind_of(doc) in RUNTIME_KINDS:
                found = placed(doc, placement)
                if isinstance(found, Document):
                    notes.extend(_add_runtime(table, found))
            elif namespaces is not None:
                namespaces.add(doc)
    return table, notes


def _through_last_candidate(source: Source, test: Callable[[bytes], bool]
                            ) -> Iterator[Document | Diagnostic]:
    """The documents of `source` up to the end of its last part `test` takes: the parts after
    it hold nothing the first pass looks for, and whatever ends the stream there (bad YAML)
    comes after every document it keeps. Only where libyaml reads the stream as kubectl cuts
    it, and without aliases (their bound grows with the text)."""
    text = source.text
    end = len(text) if source.in_parts() else kubectlstream.through_last(
        text, lambda part: test(part.encode("utf-8", "surrogatepass")))
    if end == len(text) or "*" in text[:end]:
        yield from iter_source(source)
        return
    for item in iter_source(Source(source.name, text[:end])):
        yield dataclasses.replace(item, source=source) if isinstance(item, Document) else item


def runtime_files(table: dict[RuntimeKey, RuntimeEntry]) -> set[str]:
    """The input files the runtimes of a table come from (all a second process reading the
    same inputs needs to build the same table)."""
    return {e.doc.source.name for e in table.values()
            if not e.doc.source.name.startswith("<builtin>")}


def _add_runtime(table: dict[RuntimeKey, RuntimeEntry], doc: Document) -> list[Diagnostic]:
    key = runtime_key(doc.data)
    previous = table.get(key)
    name = ("metadata", "name")
    if previous is not None and not previous.doc.source.name.startswith("<builtin>"):
        return [error("TJC-RUNTIME-DUPLICATE", f"{key.kind} {key.name} is defined twice (also "
                      f"at {previous.doc.locate()})", name).at(doc.locate(name))]
    table[key] = RuntimeEntry(doc)
    if previous is None:
        return []
    return [Diagnostic(Severity.NOTICE, "TJC-RUNTIME-OVERRIDE", f"{key.kind} {key.name} "
                       "overrides the built-in runtime", name).at(doc.locate(name))]


JOBSET = "JobSet"


def is_jobset(doc: Document) -> bool:
    """Whether a document is a JobSet written in the inputs (not compiled from a TrainJob):
    the packs' JobSet rules apply to it as to a compiled one."""
    return doc.data.get("kind") == JOBSET and doc.data.get("apiVersion") == JOBSET_API[0]


def classified(sources: Iterable[Source], placement: Placement | None = None
               ) -> Iterator[tuple[Document, str] | Diagnostic]:
    """Each document of the sources with its kind (TrainJob, a runtime kind, or JobSet), in
    input order and as placed; a diagnostic for each document that is broken, of an unknown
    kind, skipped, or refused where it is applied (another namespace, `Placement.strict`)."""
    for source in sources:
        tool_file = toolfiles.skipped(source)
        if tool_file is not None:
            yield tool_file
            continue
        for doc in iter_source(source):
            kind = doc if isinstance(doc, Diagnostic) else kind_of(doc)
            if isinstance(doc, Document) and is_jobset(doc):
                yield doc, JOBSET  # not tjc's kind, but the policies meet it
            elif isinstance(kind, Diagnostic):
                yield _template(kind, source)
            elif isinstance(doc, Document):
                found = placed(doc, placement)
                yield found if isinstance(found, Diagnostic) else (found, kind)


def _template(found: Diagnostic, source: Source) -> Diagnostic:
    """A YAML syntax error in a file with template markers (a Helm chart's templates/) is a
    notice that the file was skipped, not an error: it is not a Kubernetes object yet."""
    if found.rule != "TJC-INPUT-SYNTAX" or "{{" not in source.text:
        return found
    return Diagnostic(Severity.NOTICE, "TJC-INPUT-TEMPLATE", "skipped: a template (such as a "
                      "Helm chart's), not YAML until rendered; validate its rendered output",
                      locations=found.locations)
