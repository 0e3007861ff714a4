"""The TrainJobs of one run by namespace and name: a second one with the same pair is an error.

Applied, one TrainJob would replace the other; `render --output-dir` keeps only the first. Every
application that reads many TrainJobs (validate, render, the GitOps modes) meets them here, in
input order; workers report what they met and the parent meets it. Pure.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterable

from compiler.common.diagnostics import Diagnostic, Location, ObjectRef, Severity
from compiler.common.digests import blake2b
from compiler.io.loader import Document, Source, SourceFiles

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
        digest = int.from_bytes(blake2b(
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


