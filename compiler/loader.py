"""Read YAML and JSON inputs into plain dicts that remember where they came from.

`read_sources` takes files, folders (searched recursively for .yaml/.yml/.json) and `-` (stdin);
`iter_source`/`parse_source` turn each into documents that remember their `Source`. Loading is
safe (libyaml's safe loader, no tags that build objects), bounded (file size, alias
expansion), and strict about duplicate keys. Source positions are computed only when a
diagnostic needs them: `Document.locate` re-composes the file once and maps field paths to
`file:line:col`. An edge module: the only one besides the CLI that touches files.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from compiler import yamlscalars
from compiler.diagnostics import Diagnostic, Location, error
from compiler.diagnostics import Path as FieldPath
from compiler.errors import InputError
from compiler.yamlscalars import mapping_key

MAX_BYTES = 64 * 1024 * 1024
MAX_NODES = 1_000_000
SUFFIXES = (".yaml", ".yml", ".json")
Obj = dict[str, Any]


class _Loader(yaml.CSafeLoader):
    """libyaml's safe loader; timestamps stay strings, duplicate keys are errors."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Obj:
    loader.flatten_mapping(node)
    out: Obj = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            key = mapping_key(key, key_node) if key is None or isinstance(
                key, (int, float, bool)) else key
        if key in out:
            mark = key_node.start_mark
            raise yaml.MarkedYAMLError(
                "while constructing a mapping", node.start_mark,
                f"found duplicate key {key!r}", mark)
        out[key] = loader.construct_object(value_node, deep=True)
    return out


def _construct_str(loader: _Loader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_str)
_Loader.add_constructor("tag:yaml.org,2002:binary", _construct_str)
yamlscalars.install(_Loader)  # plain scalars as kubectl reads them

_STR, _MAP, _SEQ = ("tag:yaml.org,2002:str", "tag:yaml.org,2002:map",
                    "tag:yaml.org,2002:seq")


class _PlainLoader(_Loader):
    """The same loader for text without aliases: it builds the data in one direct walk of
    the composed nodes instead of PyYAML's generic constructor (most of the load time), with
    the same results (plain scalars as kubectl reads them, keys named as sigs.k8s.io/yaml
    names them, duplicate keys refused)."""

    def construct_document(self, node: yaml.Node) -> Any:
        return self._build(node)

    def _build(self, node: yaml.Node) -> Any:
        tag = node.tag
        if tag == _STR:
            return node.value
        if tag == _MAP:
            return self._mapping(node)  # type: ignore[arg-type]
        if tag == _SEQ:
            return [self._build(item) for item in node.value]
        scalar = self.yaml_constructors.get(tag) if isinstance(node, yaml.ScalarNode) else None
        if scalar is not None:  # scalar constructors are plain functions
            return scalar(self, node)
        return self.construct_object(node, deep=True)

    def _mapping(self, node: yaml.MappingNode) -> Obj:
        if any(key.tag == "tag:yaml.org,2002:merge" for key, _ in node.value):
            self.flatten_mapping(node)
        self.__dict__.setdefault("_tjc_key_nodes", set()).update(
            id(key) for key, _ in node.value)  # as yamlscalars' mapping constructor does
        out: Obj = {}
        for key_node, value_node in node.value:
            key = self._build(key_node)
            if not isinstance(key, str):
                key = mapping_key(key, key_node) if key is None or isinstance(
                    key, (int, float, bool)) else key
            if key in out:
                raise yaml.MarkedYAMLError("while constructing a mapping", node.start_mark,
                                           f"found duplicate key {key!r}", key_node.start_mark)
            out[key] = self._build(value_node)
        return out


@dataclass
class Source:
    """One input file (or stdin) and, once needed, the positions of its values."""

    name: str
    text: str
    _positions: list[dict[FieldPath, tuple[int, int]]] = field(default_factory=list, repr=False)
    _pending: Iterator[dict[FieldPath, tuple[int, int]]] | None = field(default=None, repr=False)

    def positions(self, index: int) -> dict[FieldPath, tuple[int, int]]:
        """Field path -> (line, col), 1-based, for the document at `index`. Documents are
        composed only as far as the last one asked for."""
        if self._pending is None:
            self._pending = _compose_positions(self.text)
        while len(self._positions) <= index:
            table = next(self._pending, None)
            if table is None:
                return {}
            self._positions.append(table)
        return self._positions[index]


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
    try:
        for node in yaml.compose_all(text, Loader=yaml.CSafeLoader):
            table: dict[FieldPath, tuple[int, int]] = {}
            if node is not None:
                _walk_node(node, (), table, 0)
            yield table
    except yaml.YAMLError:
        return


def _walk_node(node: yaml.Node, path: FieldPath, table: dict[FieldPath, tuple[int, int]],
               depth: int) -> None:
    if path in table or depth > 200 or len(table) > MAX_NODES:
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
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(MAX_BYTES + 1)
            name = "<stdin>"
        else:
            with open(path, "rb") as handle:
                raw = handle.read(MAX_BYTES + 1)
            name = path
    except OSError as exc:
        raise InputError(error("TJC-INPUT-UNREADABLE",
                               f"cannot read {path}: {exc.strerror or exc}")) from exc
    if len(raw) > MAX_BYTES:
        raise InputError(error("TJC-INPUT-TOO-LARGE",
                               f"{name} is larger than {MAX_BYTES // (1024 * 1024)} MiB"))
    try:
        return Source(name, raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise InputError(error("TJC-INPUT-ENCODING",
                               f"{name} is not UTF-8 text: {exc.reason}")) from exc


def iter_source(source: Source) -> Iterator[Document | Diagnostic]:
    """Each mapping document of a source in turn, or a located diagnostic for a bad one.

    Lazy, so a long stream is never held in memory at once; a syntax error ends the stream.
    """
    aliases = "*" in source.text
    index = 0
    try:
        loader = _Loader if aliases else _PlainLoader
        for index, data in enumerate(yaml.load_all(source.text, Loader=loader)):
            if data is None:
                continue
            where = Document({}, source, index)
            if not isinstance(data, dict):
                yield error("TJC-INPUT-NOT-OBJECT",
                            f"document {index + 1} is a {type(data).__name__}, expected a "
                            "mapping with apiVersion and kind").at(where.locate())
                continue
            problem = _expansion_problem(data) if aliases else None
            if problem:
                yield problem.at(where.locate())
                continue
            yield from _expand_list(Document(data, source, index))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where_mark = Location(source.name, mark.line + 1, mark.column + 1) if mark else \
            Location(source.name, 1, 1)
        problem_text = exc.problem or "invalid YAML"
        yield error("TJC-INPUT-SYNTAX", f"cannot parse YAML: {problem_text}").at(where_mark)
    except yaml.YAMLError as exc:
        yield error("TJC-INPUT-SYNTAX", f"cannot parse YAML: {exc}").at(
            Location(source.name, 1, 1))
    except RecursionError:
        yield error("TJC-INPUT-TOO-DEEP", f"document {index + 2} is nested too deeply").at(
            Location(source.name, 1, 1))


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


def _expansion_problem(data: Obj) -> Diagnostic | None:
    """Documents whose aliases expand beyond MAX_NODES values (or refer to themselves)."""
    sizes: dict[int, int] = {}

    def size(value: Any) -> int:
        if not isinstance(value, (dict, list)):
            return 1
        key = id(value)
        if key in sizes:
            if sizes[key] < 0:
                raise RecursionError
            return sizes[key]
        sizes[key] = -1
        items = value.values() if isinstance(value, dict) else value
        total = 1 + sum(size(item) for item in items)
        sizes[key] = total
        return total

    try:
        if size(data) <= MAX_NODES:
            return None
    except RecursionError:
        return error("TJC-INPUT-ALIAS", "a YAML alias refers to itself")
    return error("TJC-INPUT-ALIAS", f"YAML aliases expand to more than {MAX_NODES} values")


def expand_paths(paths: Sequence[str]) -> Iterator[str]:
    """Files named directly, and .yaml/.yml/.json files below folders (sorted)."""
    for path in paths:
        if path == "-":
            yield path
            continue
        candidate = Path(path)
        if candidate.is_dir():
            yield from sorted(str(p) for p in candidate.rglob("*")
                              if p.suffix in SUFFIXES and p.is_file()
                              and not any(part.startswith(".") for part in p.parts[1:]))
        else:
            yield path


def read_sources(paths: Sequence[str]) -> list[Source]:
    """Read every input file; a missing or unreadable path raises InputError."""
    return [read_source(path) for path in expand_paths(paths)]
