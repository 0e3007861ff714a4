"""Read YAML and JSON inputs into plain dicts that remember where they came from.

`read_sources` takes files, folders (searched recursively for .yaml/.yml/.json) and `-` (stdin);
`iter_source`/`parse_source` turn each into documents that remember their `Source`, the
documents kubectl reads (`kubectlstream`: a file cut at its `---` lines, each part's first
document) with kubectl's values (`yamlread`). Loading is safe (libyaml's parser; a tag never
builds an object), bounded (file size, alias expansion), and strict about duplicate keys.
Source positions are computed only when a diagnostic needs them: `Document.locate`
re-composes the file once and maps field paths to `file:line:col`. An edge module: the only
one besides the CLI that touches files.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import sys
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from compiler.common.diagnostics import Diagnostic, Location, error
from compiler.common.diagnostics import Path as FieldPath
from compiler.common.errors import InputError
from compiler.common.jsondata import Obj
from compiler.common.records import dataclass
from compiler.io import fastload, kubectlstream
from compiler.io.kubectlstream import BadSeparator, Part
from compiler.io.lazyyaml import is_yaml_error
from compiler.io.loadlimits import (
    MAX_DEPTH,
    MAX_NODES,
    expanded_limit,
    expansion_problem,
    too_deep,
    too_deep_error,
)
from compiler.io.walkfilter import GITIGNORE, WalkFilter
from compiler.io.yamlplain import FAST_PLAIN

if TYPE_CHECKING:
    import yaml
else:
    from compiler.io.lazyyaml import yaml

MAX_BYTES = 64 * 1024 * 1024
SUFFIXES = (".yaml", ".yml", ".json")
_BOM = b"\xef\xbb\xbf"


POSITION_TABLES = 64  # the position tables a source keeps (its runtimes' stay in use)


@dataclass
class Source:
    """One input file (or stdin) and, once needed, the positions of its values. A manifest
    stream (`stream`, the default) is read as kubectl reads a file (`kubectlstream`); else only
    its first document counts, as client-go reads a kubeconfig file."""

    name: str
    text: str
    _positions: OrderedDict[int, dict[FieldPath, tuple[int, int]]] = field(
        default_factory=OrderedDict, repr=False)
    _pending: Iterator[dict[FieldPath, tuple[int, int]] | None] | None = field(
        default=None, repr=False)
    _next: int = field(default=0, repr=False)
    _seeking: list[int] = field(default_factory=lambda: [0], repr=False)  # the index asked
    # where each document starts (first line, its offset), as the fast path meets it
    lines: list[tuple[int, int]] | None = field(default=None, repr=False)
    limit: int | None = field(default=None, repr=False)
    stream: bool = field(default=True, repr=False)
    _parts: bool | None = field(default=None, repr=False)

    def in_parts(self) -> bool:
        """Whether the text is read one part at a time (`kubectlstream.parts`, or the whole
        text as one part when it is not a stream) rather than as libyaml's one stream."""
        if self._parts is None:
            self._parts = not self.stream or not kubectlstream.ordinary(self.text)
        return self._parts

    def positions(self, index: int) -> dict[FieldPath, tuple[int, int]]:
        """Field path -> (line, col), 1-based, for the document at `index`. Documents are
        composed only as far as the last one asked for, and only the tables last asked for
        are kept (a long stream is not held twice), so asking for an earlier document that
        was dropped composes the stream again from its start."""
        if self.limit is not None and index >= self.limit:
            return {}
        table = self._positions.get(index)
        if table is not None:
            self._positions.move_to_end(index)
            return table
        if self.lines is not None and index < len(self.lines):
            table = self._document_positions(self.lines, index)
        else:
            table = self._walked_positions(index)
        self._positions[index] = table
        if len(self._positions) > POSITION_TABLES:
            self._positions.popitem(last=False)
        return table

    def _document_positions(self, lines: list[tuple[int, int]], index: int
                            ) -> dict[FieldPath, tuple[int, int]]:
        """The table of one document of a stream where the documents start as `lines` says,
        from its own lines only (in a stream libyaml reads as kubectl does, a document starts
        on a line of its own and ends where the next one starts: at the next `---` line)."""
        first, start = lines[index]
        end = lines[index + 1][1] if index + 1 < len(lines) else \
            self.text.find("\n---", start) + 1 or len(self.text)
        return next(_compose_positions(self.text[start:end], None, first), None) or {}

    def _walked_positions(self, index: int) -> dict[FieldPath, tuple[int, int]]:
        """The table of a document from a walk of the whole text up to it."""
        if self._pending is None or index < self._next:
            seeking = self._seeking  # (not self: the compiled walk keeps what it is handed)
            self._pending, self._next = _part_positions(self) if self.in_parts() else \
                _compose_positions(self.text, lambda i: i == seeking[0]), 0
        self._seeking[0] = index
        while self._next <= index:
            found = next(self._pending, _END)
            if found is _END:
                return {}
            self._next += 1
            table = found
        assert table is not None, "the walk made the table asked for"
        return table


@dataclass
class Document:
    """A loaded document: the data and where it came from."""

    data: Obj
    source: Source
    index: int
    base: FieldPath = ()

    def locate(self, path: FieldPath = ()) -> Location:
        """The position of `path`, or of its nearest ancestor present in the file."""
        positions = self.source.positions(self.index)
        path = (*self.base, *path)
        for end in range(len(path), -1, -1):
            found = positions.get(tuple(path[:end]))
            if found:
                return Location(self.source.name, *found)
        return Location(self.source.name, 1, 1)

    @property
    def kind(self) -> str:
        """The document's kind, or an empty string."""
        return str(self.data.get("kind", ""))


_END: Any = object()


def _compose_positions(text: str, wanted: Callable[[int], bool] | None = None,
                       first_line: int = 0
                       ) -> Iterator[dict[FieldPath, tuple[int, int]] | None]:
    """The position table of each document of `text` (whose first line is the file's
    `first_line`, 0-based); None for those `wanted` does not name (the compiled walk makes
    only those it names; the full path makes every table)."""
    fast = fastload.positions(text, _POSITION_DEPTH, MAX_NODES, wanted, first_line)
    try:
        yield from fastload.with_fallback(fast, lambda: (
            _table(node, first_line)
            for node in yaml.compose_all(text, Loader=yaml.CSafeLoader)))
    except Exception as exc:  # (not `except yaml.YAMLError`: see `is_yaml_error`)
        if not is_yaml_error(exc):
            raise


def _part_positions(source: Source) -> Iterator[dict[FieldPath, tuple[int, int]]]:
    """The position table of each part's first document (the one kubectl reads), in the
    file's lines."""
    for part in _parts_of(source):
        if isinstance(part, BadSeparator):
            return
        table = next(_compose_positions(part.text, None, part.line), None)
        yield table or {}


def _parts_of(source: Source) -> Iterator[Part | BadSeparator]:
    """The parts a source is read in: kubectl's, or the whole text when it is not a stream."""
    return kubectlstream.parts(source.text) if source.stream else iter([Part(source.text, 0, 0)])


def _table(node: yaml.Node | None, first_line: int = 0) -> dict[FieldPath, tuple[int, int]]:
    table: dict[FieldPath, tuple[int, int]] = {}
    if node is not None:
        _walk_node(node, (), table, 0, first_line + 1)
    return table


_POSITION_DEPTH = 200  # deeper values are located at their nearest recorded ancestor


def _walk_node(node: yaml.Node, path: FieldPath, table: dict[FieldPath, tuple[int, int]],
               depth: int, base: int) -> None:
    if path in table or depth > _POSITION_DEPTH or len(table) > MAX_NODES:
        return
    table[path] = (node.start_mark.line + base, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                _walk_node(value_node, (*path, key_node.value), table, depth + 1, base)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk_node(item, (*path, index), table, depth + 1, base)


def read_source(path: str) -> Source:
    """Read one file or stdin (`-`), bounded in size; unreadable input is an InputError."""
    name, raw = read_bytes(path)
    return Source(name, _decoded(name, raw))


def read_bytes(path: str) -> tuple[str, bytes]:
    """The name and bytes of one file or stdin (`-`), bounded in size as `read_source`
    bounds them (not yet decoded); unreadable input is an InputError."""
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(MAX_BYTES + 1)
            name = "<stdin>"
        else:
            fd = os.open(path, _OPEN_FLAGS)  # (no buffered file object: half the time)
            try:
                raw = _read_bounded(fd)
            finally:
                os.close(fd)
            name = path
    except OSError as exc:
        raise InputError(error("TJC-INPUT-UNREADABLE",
                               f"cannot read {path}: {exc.strerror or exc}")) from exc
    if len(raw) > MAX_BYTES:
        raise InputError(error("TJC-INPUT-TOO-LARGE",
                               f"{name} is larger than {MAX_BYTES // (1024 * 1024)} MiB"))
    return name, raw


def _decoded(name: str, raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(error("TJC-INPUT-ENCODING",
                               f"{name} is not UTF-8 text: {exc.reason}")) from exc


def _read_bounded(fd: int) -> bytes:
    """A file's bytes, no more than MAX_BYTES + 1 of them: read at the size the file has
    (asking for MAX_BYTES + 1 bytes at once would allocate that much on every read), then on
    to its end (a pipe, a device, a file that grew, a short read) in chunks."""
    want = min(os.fstat(fd).st_size, MAX_BYTES) + 1
    chunks: list[bytes] = []
    total = 0
    while total <= MAX_BYTES:
        chunk = os.read(fd, want)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        want = min(_CHUNK, MAX_BYTES + 1 - total)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


_CHUNK = 64 * 1024
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def iter_source(source: Source) -> Iterator[Document | Diagnostic]:
    """Each mapping document of a source in turn, as kubectl reads it, or a located
    diagnostic for a bad one.

    Lazy, so a long stream is never held in memory at once; a syntax error, or a document
    nested too deeply to compose safely, ends the stream. A text whose libyaml stream is
    kubectl's (`kubectlstream.ordinary`: nearly all) is parsed as one stream, by the C fast
    path where it can; any other one part at a time (`_read_parts`).
    """
    if source.in_parts():
        yield from _read_parts(source)
        return
    limit = expanded_limit(len(source.text)) if "*" in source.text else 0
    deep: list[tuple[int, int, int]] = []
    try:
        yield from _documents(source, limit, deep)
    except Exception as exc:
        if not is_yaml_error(exc):
            raise
        yield _syntax_error(source, exc)
    for index, line, column in deep:
        yield too_deep_error(index).at(Location(source.name, line, column))


def _documents(source: Source, limit: int, deep: list[tuple[int, int, int]]
               ) -> Iterator[Document | Diagnostic]:
    """The documents before the first one nested too deeply (put in `deep`, and the stream's
    `limit`), built; `limit` bounds alias expansion (0: none). The depth scan runs only where
    the full path starts: the C fast path builds no document nested more than MAX_DEPTH
    levels (it gives up there), and libyaml's composer must not meet one."""
    text = kubectlstream.ended(source.text)
    lines: list[tuple[int, int]] | None = [] if source.lines is None else None
    fast = None if limit else fastload.stream(text, FAST_PLAIN, MAX_DEPTH, lines)
    if fast is not None and lines is not None:
        source.lines = lines  # (filled as the fast path meets each document)
    documents = fastload.with_fallback(fast, lambda: _full_path(source, text, limit, deep))
    for index, data in enumerate(documents):
        if data is not None:
            yield from _checked(Document({}, source, index), data, limit)
        if source.limit is not None and index + 1 >= source.limit:
            return


def _full_path(source: Source, text: str, limit: int, deep: list[tuple[int, int, int]]
               ) -> Iterator[Any]:
    """The documents PyYAML's loaders build, none from the first one nested too deeply on
    (found here, before anything is composed: it is recorded in `deep` and `source.limit`)."""
    found = too_deep(source.text)
    if found is None:
        return _pyyaml(text, limit)
    deep.append(found)
    source.limit = found[0]
    return itertools.islice(_pyyaml(text, limit), found[0])


def _read_parts(source: Source) -> Iterator[Document | Diagnostic]:
    """The first document of each part kubectl cuts the text into (of the whole text, when
    it is not a stream); the first bad part ends them."""
    limit = expanded_limit(len(source.text)) if "*" in source.text else 0
    for index, part in enumerate(_parts_of(source)):
        if isinstance(part, BadSeparator):
            yield error("TJC-INPUT-SYNTAX", "cannot parse YAML: a line starting with --- "
                        "separates documents and may hold only a comment after it, found "
                        f"{_one_line(part.rest)!r}").at(
                            Location(source.name, part.line + 1, part.column))
            return
        deep = too_deep(part.text)
        if deep is not None and deep[0] == 0:
            source.limit = index
            yield too_deep_error(index).at(Location(source.name, part.line + deep[1], deep[2]))
            return
        aliases = limit if "*" in part.text else 0
        try:
            data = _first_document(part, source.stream, aliases)
        except Exception as exc:
            if not is_yaml_error(exc):
                raise
            yield _syntax_error(source, exc, part)
            return
        if data is not None:
            yield from _checked(Document({}, source, index), data, aliases)


def _first_document(part: Part, stream: bool, limit: int) -> Any:
    """The data of a part's first document, the only one sigs.k8s.io/yaml reads (parsed no
    further than its end: both paths are lazy); None when it has none."""
    _check_directives(part, stream)
    text = part.text
    fast = None if limit else fastload.stream(text, FAST_PLAIN)
    return next(iter(fastload.with_fallback(fast, lambda: _pyyaml(text, limit))), None)


def _pyyaml(text: str, limit: int) -> Iterator[Any]:
    """The documents of a text PyYAML's loaders read (`compiler.io.yamlread`), where the C
    fast path does not: aliases, or a build without it."""
    from compiler.io.yamlread import go_tags, loader_for

    return yaml.load_all(go_tags(text), Loader=loader_for(text, aliases=bool(limit)))


def _check_directives(part: Part, stream: bool) -> None:
    """go-yaml's rules for a first document's directives where libyaml's differ: `%YAML` other
    than 1.1 is refused (libyaml takes 1.2), and in a stream a directive has no document."""
    if "%" not in part.text:
        return
    directives = kubectlstream.leading_directives(part.text)
    for line, text in directives:
        version = _YAML_VERSION.match(text)
        if version and tuple(map(int, version.groups())) != (1, 1):
            raise _marked_line(line, "found incompatible YAML document: kubectl reads "
                               f"%YAML 1.1 only, not {'.'.join(version.groups())}")
    if directives and stream and kubectlstream.orphan(part.text):
        raise _marked_line(directives[0][0], f"the directive {directives[0][1]!r} has no "
                           "document: kubectl cuts a file at its lines starting with ---, so "
                           "no --- can follow a directive (remove it)")


_YAML_VERSION = re.compile(r"%YAML[ \t]+([0-9]+)\.([0-9]+)(?:[ \t]|$)")


def _marked_line(line: int, problem: str) -> yaml.MarkedYAMLError:
    """A YAML error at the start of a 0-based line of the text being parsed."""
    return yaml.MarkedYAMLError(problem=problem, problem_mark=yaml.Mark(
        "", 0, line, 0, None, None))  # type: ignore[arg-type]


def _syntax_error(source: Source, exc: yaml.YAMLError, part: Part | None = None) -> Diagnostic:
    """A YAML error as one located diagnostic (in a part: at its place in the file)."""
    line, offset = (part.line, part.offset) if part else (0, 0)
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = Location(source.name, line + mark.line + 1, mark.column + 1) if mark else \
            Location(source.name, line + 1, 1)
        return error("TJC-INPUT-SYNTAX", "cannot parse YAML: "
                     f"{_one_line(exc.problem or 'invalid YAML')}").at(where)
    if isinstance(exc, yaml.reader.ReaderError):
        before = source.text[:offset + exc.position]
        where = Location(source.name, before.count("\n") + 1,
                         len(before) - before.rfind("\n"))
        return error("TJC-INPUT-SYNTAX", f"cannot parse YAML: character U+{exc.character:04X} "
                     f"is not allowed: {exc.reason}").at(where)
    return error("TJC-INPUT-SYNTAX", f"cannot parse YAML: {_one_line(str(exc))}").at(
        Location(source.name, line + 1, 1))


def _checked(where: Document, data: Any, limit: int) -> Iterator[Document | Diagnostic]:
    if not isinstance(data, dict):
        yield error("TJC-INPUT-NOT-OBJECT",
                    f"document {where.index + 1} is a {type(data).__name__}, expected a "
                    "mapping with apiVersion and kind").at(where.locate())
        return
    problem = expansion_problem(data, limit) if limit else None
    if problem:
        yield problem.at(where.locate())
        return
    yield from _expand_list(Document(data, where.source, where.index))


def _one_line(text: str) -> str:
    """libyaml's messages span lines (`in "<unicode string>", line 3`); keep the first."""
    return re.sub(r"\s+", " ", text.split("\n  in ")[0]).strip()


def _expand_list(doc: Document) -> Iterator[Document | Diagnostic]:
    """A `v1 List` (as `kubectl get -o yaml` prints) stands for its items."""
    items = doc.data.get("items")
    if doc.data.get("kind") != "List" or doc.data.get("apiVersion") != "v1" \
            or not isinstance(items, list):
        yield doc
        return
    for i, item in enumerate(items):
        if isinstance(item, dict):
            yield Document(item, doc.source, doc.index, ("items", i))
        else:
            yield error("TJC-INPUT-NOT-OBJECT", f"List item {i} is not a mapping", ("items", i)
                        ).at(Document({}, doc.source, doc.index).locate(("items", i)))


def parse_source(source: Source) -> tuple[list[Document], list[Diagnostic]]:
    """Every mapping document of a source, and the diagnostics for the bad ones."""
    docs: list[Document] = []
    problems: list[Diagnostic] = []
    for item in iter_source(source):
        if isinstance(item, Document):
            docs.append(item)
        else:
            problems.append(item)
    return docs, problems


def expand_paths(paths: Sequence[str], exclude: Sequence[str] = ()) -> Iterator[str]:
    """Files named directly, and .yaml/.yml/.json files below folders (sorted), without what
    `compiler.io.walkfilter` leaves out there (`exclude`: globs of `--exclude`)."""
    for path in paths:
        if path == "-":
            yield path
            continue
        if os.path.isdir(path):
            yield from _files_below(str(Path(path)), WalkFilter(path, exclude))
        else:
            yield path


_Entry = tuple[str, "list[Any] | None"]  # a path below the folder, and a folder's rules


def _files_below(top: str, walk: WalkFilter) -> Iterator[str]:
    """The input files below a folder, not below hidden folders or symlinked ones, nor what
    `walk` leaves out, named as `Path(top) / ...` names them (os.scandir: pathlib would intern
    every name, and a folder's entries tell which are regular files without a stat of each).
    They come in the order of their paths as strings, one folder listed at a time (a run over
    100,000 files never holds them all in a list to sort)."""
    stack = [iter(_listing(top, walk.outer_rules(), top, walk))]
    while stack:
        found = next(stack[-1], None)
        if found is None:
            stack.pop()
        elif found[1] is None:
            yield found[0]
        else:
            stack.append(iter(_listing(found[0], found[1], top, walk)))


def _listing(folder: str, rules: list[Any], top: str, walk: WalkFilter) -> list[_Entry]:
    """A folder's input files and the folders to walk, sorted as their paths sort: by name,
    a folder's name with the "/" that follows it in the paths below it."""
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:  # as os.walk: an unreadable folder is passed over
        return []
    if any(entry.name == GITIGNORE for entry in entries):
        rules = [*rules, *walk.rules_of(walk.absolute(folder))]
    keyed: list[tuple[str, _Entry]] = []
    for entry in entries:
        name = entry.name
        if name.startswith("."):
            continue
        if _is(entry.is_dir):
            if not _is(entry.is_symlink) and not walk.skipped(entry.path, name, True, rules):
                keyed.append((name + "/", (entry.path, rules)))
        elif (os.path.splitext(name)[1] in SUFFIXES and _is(entry.is_file)
              and not walk.skipped(entry.path, name, False, rules)):
            keyed.append((name, (entry.path[2:] if top == "." else entry.path, None)))
    keyed.sort(key=lambda pair: pair[0])
    return [item for _, item in keyed]


def _is(test: Callable[[], bool]) -> bool:
    try:
        return test()
    except OSError:
        return False


def read_sources(paths: Sequence[str], exclude: Sequence[str] = ()) -> list[Source]:
    """Read every input file; a missing or unreadable path raises InputError."""
    return [read_source(path) for path in expand_paths(paths, exclude)]


class _Strings(Sequence[str]):
    """A sequence of strings made on demand, one index at a time (`_at`); a slice is a list."""

    def __len__(self) -> int:
        raise NotImplementedError

    def _at(self, index: int) -> str:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(len(self)))]
        return self._at(index)


class PathList(_Strings):
    """Many paths in little memory: one string and their offsets (a list of 100,000 path
    strings would cost more than the documents a run holds at once)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._ends = array("Q")
        chunks: list[str] = []
        chunk: list[str] = []
        total = 0
        for path in paths:  # (joined 1,024 at a time: never a list of them all)
            chunk.append(path)
            total += len(path)
            self._ends.append(total)
            if len(chunk) == 1024:
                chunks.append("".join(chunk))
                chunk = []
        chunks.append("".join(chunk))
        self._joined = "".join(chunks)

    def __len__(self) -> int:
        return len(self._ends)

    def _at(self, index: int) -> str:
        if index < 0:
            index += len(self)
        start = self._ends[index - 1] if index > 0 else 0
        return self._joined[start:self._ends[index]]


class _Names(_Strings):
    """The files' names as their sources have them (stdin as `<stdin>`), without a copy."""

    def __init__(self, paths: Sequence[str]) -> None:
        self._paths = paths

    def __len__(self) -> int:
        return len(self._paths)

    def _at(self, index: int) -> str:
        path = self._paths[index]
        return "<stdin>" if path == "-" else path


class SourceFiles:
    """The input files of a run, read when they are needed and not kept: iterating reads
    each file in turn (again on every pass; stdin once), so a run over many files holds
    one at a time. `names` are the paths as `read_source` names them."""

    def __init__(self, paths: Sequence[str], exclude: Sequence[str] = ()) -> None:
        self.paths: Sequence[str] = PathList(expand_paths(paths, exclude))
        self._stdin = read_source("-") if "-" in self.paths else None

    @property
    def names(self) -> Sequence[str]:
        """The files' names as their sources have them, in input order."""
        return _Names(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def __iter__(self) -> Iterator[Source]:
        return (self[i] for i in range(len(self.paths)))

    def __getitem__(self, index: int) -> Source:
        path = self.paths[index]
        if path == "-" and self._stdin is not None:
            return self._stdin
        return read_source(path)

    def index(self, name: str) -> int:
        """The position of the file of this name."""
        return next(i for i, p in enumerate(self.paths)
                    if p == name or (p == "-" and name == "<stdin>"))

    def subset(self, names: Collection[str]) -> SourceFiles:
        """The same run's files of these names, in input order."""
        out = SourceFiles([])
        out.paths = PathList(p for p in self.paths
                             if ("<stdin>" if p == "-" else p) in names)
        out._stdin = self._stdin
        return out

    def where(self, test: Callable[[bytes], bool]) -> Iterator[Source]:
        """The sources whose text, as UTF-8 bytes without a byte order mark, passes `test`,
        in input order. Every file is read and checked as `read_source` checks it (the same
        errors, in the same order), but only those that pass are decoded."""
        for path in self.paths:
            if path == "-" and self._stdin is not None:
                if test(self._stdin.text.encode()):
                    yield self._stdin
                continue
            name, raw = read_bytes(path)
            if test(raw[len(_BOM):] if raw.startswith(_BOM) else raw):
                yield Source(name, _decoded(name, raw))
            elif not raw.isascii():
                _decoded(name, raw)  # not UTF-8: the error reading it as a source gives

    def size(self, enough: int | None = None) -> int:
        """The inputs' total size in bytes (as the files are now), or, once it reaches
        `enough`, as far as it was counted."""
        total = 0
        for path in self.paths:
            with contextlib.suppress(OSError):
                total += len(self._stdin.text) if path == "-" and self._stdin else \
                    os.path.getsize(path)
            if enough is not None and total >= enough:
                break
        return total
