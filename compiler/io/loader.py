"""Read YAML and JSON inputs into plain dicts that remember where they came from.

`read_sources` takes files, folders (searched recursively for .yaml/.yml/.json) and `-` (stdin);
`iter_source`/`parse_source` turn each into documents that remember their `Source`. Loading is
safe (libyaml's safe loader, no tags that build objects), bounded (file size, alias
expansion), and strict about duplicate keys. Source positions are computed only when a
diagnostic needs them: `Document.locate` re-composes the file once and maps field paths to
`file:line:col`. An edge module: the only one besides the CLI that touches files.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import re
import sys
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, overload

import yaml

from compiler.common.diagnostics import Diagnostic, Location, error
from compiler.common.diagnostics import Path as FieldPath
from compiler.common.errors import InputError
from compiler.common.jsondata import Obj
from compiler.io import fastload, yamlscalars
from compiler.io.loadlimits import (
    MAX_NODES,
    expanded_limit,
    expansion_problem,
    too_deep,
    too_deep_error,
)
from compiler.io.yamlscalars import mapping_key

MAX_BYTES = 64 * 1024 * 1024
SUFFIXES = (".yaml", ".yml", ".json")
_BOM = b"\xef\xbb\xbf"


class _Loader(yaml.CSafeLoader):
    """libyaml's safe loader; timestamps stay strings, duplicate keys are errors, and a value
    a standard tag cannot build (`!!int x`, `!!bool maybe`) is a marked error, not a crash."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """Build one node; a constructor's ValueError/TypeError becomes a marked YAML error."""
        try:
            value = super().construct_object(node, deep)
        except (ValueError, TypeError, LookupError, ArithmeticError) as exc:
            raise _cannot_hold(node) from exc
        return self._json_value(node, value)

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        """The tag of an untagged node, without PyYAML's generic resolver loop: every plain
        scalar is the kubectl-plain tag (`yamlscalars.install`), any other the string tag."""
        if kind is _SCALAR_NODE:  # called for every node: module names, not attributes
            return _PLAIN if implicit[0] else _STR
        return _SEQ if kind is _SEQUENCE_NODE else _MAP

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        """Nothing to track: this loader has no path resolvers (libyaml calls it per node)."""

    def ascend_resolver(self) -> None:
        """Nothing to track (see `descend_resolver`)."""

    def _json_value(self, node: yaml.Node, value: Any) -> Any:
        """`value`, unless it is a float JSON cannot carry (a key becomes a string)."""
        if isinstance(value, float) and not math.isfinite(value) and \
                id(node) not in self.__dict__.get("_tjc_key_nodes", ()):
            raise yaml.constructor.ConstructorError(
                None, None, f"{value} has no JSON form", node.start_mark)
        return value


def _cannot_hold(node: yaml.Node) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(
        None, None, f"{node.tag} cannot hold {_short(node)}", node.start_mark)


def _short(node: yaml.Node) -> str:
    if not isinstance(node, yaml.ScalarNode):
        return "a collection"
    text = str(node.value)
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _unsupported(loader: _Loader, node: yaml.Node) -> None:
    raise yaml.constructor.ConstructorError(
        None, None, f"{node.tag} has no JSON form", node.start_mark)


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Obj:
    return _with_merges(node, lambda key_node: _string_key(
        loader.construct_object(key_node, deep=True), node, key_node),
        lambda value_node: loader.construct_object(value_node, deep=True))


def _string_key(key: Any, node: yaml.Node, key_node: yaml.Node) -> str:
    """A built mapping key as sigs.k8s.io/yaml names it (a collection or null is an error)."""
    if type(key) is str:
        return key
    _key_kind(key, node, key_node)
    return mapping_key(key, key_node) if key is None or isinstance(
        key, (int, float, bool)) else key


def _is_merge(node: yaml.Node) -> bool:
    """A merge key, as go-yaml v2 (kubectl's reader) tells one: `<<` written plain, or tagged
    `!!merge`."""
    return type(node) is _SCALAR_NODE and node.value == "<<" and node.tag in (_PLAIN, _MERGE)


def _with_merges(node: yaml.MappingNode, key_of: Callable[[yaml.Node], str],
                 value_of: Callable[[yaml.Node], Any]) -> Obj:
    """A mapping as go-yaml v2 builds one: its pairs in order, each merge key setting its
    value's entries over what is there (a sequence's mappings from the last to the first, so
    the first wins), any other key set once (twice is an error, as everywhere in tjc)."""
    out: Obj = {}
    own: set[str] = set()
    for key_node, value_node in node.value:
        if _is_merge(key_node):
            value = value_of(value_node)
            maps = value if isinstance(value, list) else [value]
            if not all(isinstance(item, dict) for item in maps):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    "map merge requires map or sequence of maps as the value",
                    value_node.start_mark)
            for item in reversed(maps):
                out.update(item)
            continue
        key = key_of(key_node)
        if key in own:
            raise yaml.MarkedYAMLError("while constructing a mapping", node.start_mark,
                                       f"found duplicate key {key!r}", key_node.start_mark)
        own.add(key)
        out[key] = value_of(value_node)
    return out


def _key_kind(key: Any, node: yaml.Node, key_node: yaml.Node) -> None:
    """A null or a collection cannot be a key (no JSON form): a marked error."""
    if key is None or isinstance(key, (dict, list)):
        raise yaml.constructor.ConstructorError(
            "while constructing a mapping", node.start_mark,
            f"a {'null' if key is None else 'collection'} cannot be a key: keys must be "
            "strings, numbers or booleans", key_node.start_mark)


def _construct_str(loader: _Loader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_str)
_Loader.add_constructor("tag:yaml.org,2002:binary", _construct_str)
for _tag in ("set", "omap", "pairs"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _unsupported)
yamlscalars.install(_Loader)  # plain scalars as kubectl reads them

_STR, _MAP, _SEQ = ("tag:yaml.org,2002:str", "tag:yaml.org,2002:map",
                    "tag:yaml.org,2002:seq")
_PLAIN, _MERGE = yamlscalars.PLAIN_TAG, "tag:yaml.org,2002:merge"
_SCALAR_NODE, _SEQUENCE_NODE, _MAPPING_NODE = yaml.ScalarNode, yaml.SequenceNode, \
    yaml.MappingNode


class _PlainLoader(_Loader):
    """The same loader for text without aliases: it builds the data in one direct walk of
    the composed nodes instead of PyYAML's generic constructor (most of the load time), with
    the same results (plain scalars as kubectl reads them, keys named as sigs.k8s.io/yaml
    names them, duplicate keys refused)."""

    def construct_document(self, node: yaml.Node) -> Any:
        return self._build(node)

    def _build(self, node: yaml.Node) -> Any:
        tag, kind = node.tag, type(node)
        if tag == _PLAIN:
            value = _plain(node.value)
            if value is not _MISSING:
                return value
        elif tag == _STR and kind is _SCALAR_NODE:
            return node.value
        elif tag == _MAP and kind is _MAPPING_NODE:
            return self._mapping(node)  # type: ignore[arg-type]
        elif tag == _SEQ and kind is _SEQUENCE_NODE:
            return [self._build(item) for item in node.value]
        elif tag in (_STR, _MAP, _SEQ):  # `!!map x`, `!!str {a: 1}`: a tag on the wrong node
            raise _cannot_hold(node)
        scalar = self.yaml_constructors.get(tag) if isinstance(node, yaml.ScalarNode) else None
        if scalar is None:
            return self.construct_object(node, deep=True)
        try:  # scalar constructors are plain functions; the same checks as construct_object
            value = scalar(self, node)
        except (ValueError, TypeError, LookupError, ArithmeticError) as exc:
            raise _cannot_hold(node) from exc
        return self._json_value(node, value)

    def _key(self, node: yaml.Node) -> Any:
        """A mapping key: as a value, except that a key may be a value JSON cannot carry
        (`.inf`; `mapping_key` names it), as yamlscalars' mapping constructor allows."""
        tag = node.tag
        if tag == _STR and type(node) is _SCALAR_NODE:
            return node.value
        if tag == _PLAIN:
            value = _plain(node.value)
            if value is not _MISSING:
                return value
        self.__dict__.setdefault("_tjc_key_nodes", set()).add(id(node))
        return self._build(node)

    def _mapping(self, node: yaml.MappingNode) -> Obj:
        out: Obj = {}
        for key_node, value_node in node.value:
            tag = key_node.tag
            key = key_node.value if tag == _STR else _PLAIN_VALUES.get(key_node.value) \
                if tag == _PLAIN else None  # the common keys, without a call
            if type(key) is not str or key == "<<":
                if _is_merge(key_node):
                    return self._merged(node)
                key = _string_key(self._key(key_node), node, key_node)
            if key in out:
                raise yaml.MarkedYAMLError("while constructing a mapping", node.start_mark,
                                           f"found duplicate key {key!r}", key_node.start_mark)
            tag = value_node.tag
            if tag == _STR and type(value_node) is _SCALAR_NODE:
                out[key] = value_node.value
            elif tag == _PLAIN and (value := _PLAIN_VALUES.get(value_node.value, _MISSING)) \
                    is not _MISSING:
                out[key] = value
            else:
                out[key] = self._build(value_node)
        return out

    def _merged(self, node: yaml.MappingNode) -> Obj:
        """A mapping with merge keys, built again from its first pair (`_with_merges`)."""
        return _with_merges(node, lambda key_node: _string_key(self._key(key_node), node,
                                                               key_node), self._build)


_MISSING = object()
_PLAIN_VALUES: dict[str, Any] = {}  # plain scalar text -> value, for texts seen before
_PLAIN_LIMIT = 16384


def _plain(text: str) -> Any:
    """The value of a plain scalar (an immutable str, number, bool or None), remembered per
    text; `_MISSING` when it has none JSON can carry (the caller's constructor reports it)."""
    value = _PLAIN_VALUES.get(text, _MISSING)
    if value is not _MISSING:
        return value
    try:
        value = yamlscalars.resolve_plain(text)
    except Exception:  # the full path raises the marked error
        return _MISSING
    if isinstance(value, float) and not math.isfinite(value):
        return _MISSING
    if len(_PLAIN_VALUES) < _PLAIN_LIMIT:  # the recurring texts come early; keep them
        _PLAIN_VALUES[text] = value
    return value


_FAST_PLAIN = fastload.Plain(_PLAIN_VALUES, _plain, _MISSING, yamlscalars.WORDS,
                             yamlscalars.NUMBER_STARTS)

POSITION_TABLES = 64  # the position tables a source keeps (its runtimes' stay in use)


@dataclass
class Source:
    """One input file (or stdin) and, once needed, the positions of its values."""

    name: str
    text: str
    _positions: OrderedDict[int, dict[FieldPath, tuple[int, int]]] = field(
        default_factory=OrderedDict, repr=False)
    _pending: Iterator[dict[FieldPath, tuple[int, int]]] | None = field(default=None, repr=False)
    _next: int = field(default=0, repr=False)
    limit: int | None = field(default=None, repr=False)

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
        if self._pending is None or index < self._next:
            self._pending, self._next = _compose_positions(self.text), 0
        while self._next <= index:
            found = next(self._pending, None)
            if found is None:
                return {}
            self._next += 1
            table = found
        assert table is not None
        self._positions[index] = table
        if len(self._positions) > POSITION_TABLES:
            self._positions.popitem(last=False)
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


def _compose_positions(text: str) -> Iterator[dict[FieldPath, tuple[int, int]]]:
    fast = fastload.positions(text, _POSITION_DEPTH, MAX_NODES)
    try:
        yield from fastload.with_fallback(fast, lambda: map(_table, yaml.compose_all(
            text, Loader=yaml.CSafeLoader)))
    except yaml.YAMLError:
        return


def _table(node: yaml.Node | None) -> dict[FieldPath, tuple[int, int]]:
    table: dict[FieldPath, tuple[int, int]] = {}
    if node is not None:
        _walk_node(node, (), table, 0)
    return table


_POSITION_DEPTH = 200  # deeper values are located at their nearest recorded ancestor


def _walk_node(node: yaml.Node, path: FieldPath, table: dict[FieldPath, tuple[int, int]],
               depth: int) -> None:
    if path in table or depth > _POSITION_DEPTH or len(table) > MAX_NODES:
        return
    table[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                _walk_node(value_node, (*path, key_node.value), table, depth + 1)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk_node(item, (*path, index), table, depth + 1)


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
            with open(path, "rb") as handle:
                raw = _read_bounded(handle)
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


def _read_bounded(handle: BinaryIO) -> bytes:
    """A file's bytes, no more than MAX_BYTES + 1 of them: read at the size the file has
    (asking for MAX_BYTES + 1 bytes at once would allocate that much on every read), then, if
    there is more (a pipe, a device, a file that grew), in chunks."""
    size = min(os.fstat(handle.fileno()).st_size, MAX_BYTES)
    first = handle.read(size + 1)
    if len(first) <= size:
        return first
    chunks, total = [first], len(first)
    while total <= MAX_BYTES:
        chunk = handle.read(min(_CHUNK, MAX_BYTES + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


_CHUNK = 64 * 1024


def iter_source(source: Source) -> Iterator[Document | Diagnostic]:
    """Each mapping document of a source in turn, or a located diagnostic for a bad one.

    Lazy, so a long stream is never held in memory at once; a syntax error, or a document
    nested too deeply to compose safely, ends the stream.
    """
    deep = too_deep(source.text)
    if deep is not None:
        source.limit = deep[0]
    limit = expanded_limit(len(source.text)) if "*" in source.text else 0
    try:
        yield from _documents(source, limit)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where_mark = Location(source.name, mark.line + 1, mark.column + 1) if mark else \
            Location(source.name, 1, 1)
        problem_text = _one_line(exc.problem or "invalid YAML")
        yield error("TJC-INPUT-SYNTAX", f"cannot parse YAML: {problem_text}").at(where_mark)
    except yaml.reader.ReaderError as exc:
        before = source.text[:exc.position]
        where = Location(source.name, before.count("\n") + 1,
                         exc.position - before.rfind("\n"))
        yield error("TJC-INPUT-SYNTAX", f"cannot parse YAML: character U+{exc.character:04X} "
                    f"is not allowed: {exc.reason}").at(where)
    except yaml.YAMLError as exc:
        yield error("TJC-INPUT-SYNTAX", f"cannot parse YAML: {_one_line(str(exc))}").at(
            Location(source.name, 1, 1))
    if deep is not None:
        yield too_deep_error(deep[0]).at(Location(source.name, deep[1], deep[2]))


def _documents(source: Source, limit: int) -> Iterator[Document | Diagnostic]:
    """The documents before `source.limit`, built; `limit` bounds alias expansion (0: none)."""
    if source.limit == 0:
        return
    loader = _Loader if limit else _PlainLoader  # aliases need PyYAML's own construction
    fast = None if limit else fastload.stream(source.text, _FAST_PLAIN)
    documents = fastload.with_fallback(fast, lambda: yaml.load_all(source.text, Loader=loader))
    for index, data in enumerate(documents):
        if data is not None:
            yield from _checked(Document({}, source, index), data, limit)
        if source.limit is not None and index + 1 >= source.limit:
            return


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


def expand_paths(paths: Sequence[str]) -> Iterator[str]:
    """Files named directly, and .yaml/.yml/.json files below folders (sorted)."""
    for path in paths:
        if path == "-":
            yield path
            continue
        if os.path.isdir(path):
            yield from sorted(_files_below(str(Path(path))))
        else:
            yield path


def _files_below(top: str) -> Iterator[str]:
    """The input files below a folder, not below hidden folders or symlinked ones, named as
    `Path(top) / ...` names them (os.scandir: pathlib would intern every name, and a folder's
    entries tell which are regular files without a stat of each)."""
    folders = [top]
    while folders:
        try:
            with os.scandir(folders.pop()) as listing:
                entries = list(listing)
        except OSError:  # as os.walk: an unreadable folder is passed over
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            if _is(entry.is_dir):
                if not _is(entry.is_symlink):
                    folders.append(entry.path)
            elif os.path.splitext(name)[1] in SUFFIXES and _is(entry.is_file):
                yield entry.path[2:] if top == "." else entry.path


def _is(test: Callable[[], bool]) -> bool:
    try:
        return test()
    except OSError:
        return False


def read_sources(paths: Sequence[str]) -> list[Source]:
    """Read every input file; a missing or unreadable path raises InputError."""
    return [read_source(path) for path in expand_paths(paths)]


class PathList(Sequence[str]):
    """Many paths in little memory: one string and their offsets (a list of 100,000 path
    strings would cost more than the documents a run holds at once)."""

    def __init__(self, paths: Iterable[str]) -> None:
        items = list(paths)
        self._joined = "".join(items)
        self._ends = array("Q", itertools.accumulate(map(len, items)))

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        start = self._ends[index - 1] if index > 0 else 0
        return self._joined[start:self._ends[index]]


class SourceFiles:
    """The input files of a run, read when they are needed and not kept: iterating reads
    each file in turn (again on every pass; stdin once), so a run over many files holds
    one at a time. `names` are the paths as `read_source` names them."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths: Sequence[str] = PathList(expand_paths(paths))
        self._stdin = read_source("-") if "-" in self.paths else None

    @property
    def names(self) -> list[str]:
        """The files' names as their sources have them, in input order."""
        return ["<stdin>" if p == "-" else p for p in self.paths]

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
