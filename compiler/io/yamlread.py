"""PyYAML loader classes that build a YAML document's data as kubectl reads it.

libyaml parses (PyYAML's C parser); the values are sigs.k8s.io/yaml's (go-yaml v2): plain
scalars by `yamlscalars`, tagged scalars by `yamltags` (a tag on a collection changes
nothing), keys named as sigs.k8s.io/yaml names them, `<<` merged as go-yaml merges it, and
duplicate keys refused (as everywhere in tjc). `Loader` builds through PyYAML's constructor
(which follows aliases); `PlainLoader` walks the composed nodes directly, for text without
aliases (most of the load time saved). libyaml's own composer resolves a scalar tagged with
the non-specific `!` as if it were plain (`! 1` would be 1; kubectl reads "1"), so text that
may hold one is composed by PyYAML's composer over libyaml's events instead (`loader_for`);
and libyaml ends a tag before `,`, `[` and `]` where go-yaml does not (`go_tags`).

Plain scalars' values come from `compiler.io.yamlplain`, shared with the C fast path; the loader
imports this module only when a file needs PyYAML (`compiler.io.loader`).
Called by `compiler.io.loader` only; reads no files.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml
from yaml.composer import Composer

from compiler.common.jsondata import Obj
from compiler.io import yamlscalars, yamltags
from compiler.io.yamlplain import _PLAIN_VALUES, MISSING, plain
from compiler.io.yamlscalars import Unrepresentable
from compiler.io.yamltags import NON_SPECIFIC, TagMismatch

_STR, _MAP, _SEQ = yamltags.STR_TAG, "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_PLAIN, _MERGE = yamlscalars.PLAIN_TAG, "tag:yaml.org,2002:merge"
_SCALAR_NODE, _SEQUENCE_NODE, _MAPPING_NODE = yaml.ScalarNode, yaml.SequenceNode, \
    yaml.MappingNode
_MERGE_TAGS = (_PLAIN, _MERGE, NON_SPECIFIC)  # go-yaml: `<<` implicit (plain or `!`), or !!merge


class Loader(yaml.CSafeLoader):
    """libyaml's safe loader with kubectl's values (see the module's doc); a value kubectl
    refuses (`!!int x`, `.inf`) is a marked error at its node."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """Build one node; a constructor's ValueError/TypeError becomes a marked YAML error."""
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, LookupError, ArithmeticError) as exc:
            raise _marked(node, f"{node.tag} cannot hold {_short(node)}") from exc

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        """The tag of an untagged node, without PyYAML's generic resolver loop: every plain
        scalar is the kubectl-plain tag, any other the string tag."""
        if kind is _SCALAR_NODE:  # called for every node: module names, not attributes
            return _PLAIN if implicit[0] else _STR
        return _SEQ if kind is _SEQUENCE_NODE else _MAP

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        """Nothing to track: this loader has no path resolvers (libyaml calls it per node)."""

    def ascend_resolver(self) -> None:
        """Nothing to track (see `descend_resolver`)."""


def _marked(node: yaml.Node, problem: str) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(None, None, problem, node.start_mark)


def _short(node: yaml.Node) -> str:
    if not isinstance(node, yaml.ScalarNode):
        return "a collection"
    text = str(node.value)
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _construct(loader: Loader, node: yaml.Node) -> Any:
    """Any node, whatever its tag: a mapping, a sequence (PyYAML's generator, which lets an
    alias refer to a collection being built), or a scalar as kubectl reads it."""
    if isinstance(node, yaml.MappingNode):
        return _with_merges(node, lambda key_node: _key(node, key_node),
                            lambda value_node: loader.construct_object(value_node, deep=True))
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_yaml_seq(node)
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    """A scalar node's JSON value as the API server receives it from kubectl."""
    tag, text = node.tag, node.value
    if tag == _STR:
        return text
    try:
        return yamlscalars.api_value(*(yamlscalars.go_value(text) if tag == _PLAIN
                                       else yamltags.tagged(tag, text)))
    except TagMismatch as exc:
        raise _marked(node, str(exc)) from exc
    except Unrepresentable as exc:
        raise _marked(node, f"{exc} (kubectl cannot send {text!r})") from exc


def _key(node: yaml.MappingNode, key_node: yaml.Node) -> str:
    """A mapping key as sigs.k8s.io/yaml names it: a scalar read as kubectl reads it, then
    converted to a string; a null or a collection is an error."""
    if type(key_node) is not _SCALAR_NODE:
        raise _bad_key(node, key_node, "a collection")
    tag, text = key_node.tag, key_node.value
    if tag == _STR:
        return str(text)
    try:
        kind, value = yamlscalars.go_value(text) if tag == _PLAIN else \
            yamltags.tagged(tag, text)
        if kind == "null":
            raise _bad_key(node, key_node, "a null")
        return yamltags.key_text(kind, value)
    except TagMismatch as exc:
        raise _marked(key_node, str(exc)) from exc
    except Unrepresentable as exc:
        raise _marked(key_node, f"unsupported map key {text!r} (kubectl cannot convert "
                      "it)") from exc


def _bad_key(node: yaml.Node, key_node: yaml.Node, what: str) -> yaml.MarkedYAMLError:
    """A null or a collection cannot be a key (no JSON form)."""
    return yaml.constructor.ConstructorError(
        "while constructing a mapping", node.start_mark, f"{what} cannot be a key: keys must "
        "be strings, numbers or booleans", key_node.start_mark)


def _is_merge(node: yaml.Node) -> bool:
    """A merge key, as go-yaml v2 (kubectl's reader) tells one: `<<` untagged and plain,
    tagged with the non-specific `!` (any quoting), or tagged `!!merge`."""
    return type(node) is _SCALAR_NODE and node.value == "<<" and node.tag in _MERGE_TAGS


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
            raise _duplicate(node, key_node, key)
        own.add(key)
        out[key] = value_of(value_node)
    return out


def _duplicate(node: yaml.Node, key_node: yaml.Node, key: str) -> yaml.MarkedYAMLError:
    return yaml.MarkedYAMLError("while constructing a mapping", node.start_mark,
                                f"found duplicate key {key!r}", key_node.start_mark)


Loader.yaml_constructors = {None: _construct}


class PlainLoader(Loader):
    """The same loader for text without aliases: it builds the data in one direct walk of
    the composed nodes instead of PyYAML's generic constructor, with the same results."""

    def construct_document(self, node: yaml.Node) -> Any:
        return self._build(node)

    def _build(self, node: yaml.Node) -> Any:
        kind = type(node)
        if kind is _SCALAR_NODE:
            if node.tag == _PLAIN:
                value = plain(node.value)
                if value is not MISSING:
                    return value
            return _scalar(node)
        if kind is _MAPPING_NODE:
            return self._mapping(node)  # type: ignore[arg-type]
        return [self._build(item) for item in node.value]

    def _mapping(self, node: yaml.MappingNode) -> Obj:
        out: Obj = {}
        for key_node, value_node in node.value:
            tag = key_node.tag
            key = key_node.value if tag == _STR else _PLAIN_VALUES.get(key_node.value) \
                if tag == _PLAIN else None  # the common keys, without a call
            if type(key) is not str or key == "<<":
                if _is_merge(key_node):
                    return _with_merges(node, lambda k: _key(node, k), self._build)
                key = _key(node, key_node)
            if key in out:
                raise _duplicate(node, key_node, key)
            tag = value_node.tag
            if tag == _STR and type(value_node) is _SCALAR_NODE:
                out[key] = value_node.value
            elif tag == _PLAIN and (value := _PLAIN_VALUES.get(value_node.value, MISSING)) \
                    is not MISSING:
                out[key] = value
            else:
                out[key] = self._build(value_node)
        return out


class _NonSpecific(Composer):
    """PyYAML's composer (in Python, over libyaml's events), keeping the tag `!` on a scalar
    where libyaml's composer would resolve the scalar as a plain one."""

    anchors: dict[Any, yaml.Node]

    def compose_scalar_node(self, anchor: Any) -> yaml.ScalarNode:
        event = self.peek_event()  # type: ignore[attr-defined]
        if event.tag != NON_SPECIFIC:
            return super().compose_scalar_node(anchor)
        self.get_event()  # type: ignore[attr-defined]
        node = yaml.ScalarNode(NON_SPECIFIC, event.value, event.start_mark, event.end_mark,
                               style=event.style)
        if anchor is not None:
            self.anchors[anchor] = node
        return node


class ExactLoader(_NonSpecific, Loader):
    """`Loader` for text that may hold the non-specific tag (`loader_for`)."""

    def __init__(self, stream: str) -> None:
        Loader.__init__(self, stream)
        self.anchors = {}


class ExactPlainLoader(_NonSpecific, PlainLoader):
    """`PlainLoader` for text that may hold the non-specific tag (`loader_for`)."""

    def __init__(self, stream: str) -> None:
        PlainLoader.__init__(self, stream)
        self.anchors = {}


# `!` then a blank, a flow comma or the end (the tag alone), or `!<` (a verbatim tag, which
# may spell `!`); a `%TAG` handle whose prefix is `!` ends its line with one too.
_NON_SPECIFIC_HINT = re.compile(r"!(?:[\s,<]|\Z)")


def loader_for(text: str, aliases: bool) -> type[Loader]:
    """The loader class for `text`: `Loader` where it has aliases, else `PlainLoader`; the
    exact-tag variant where it may hold the non-specific tag (a cheap, generous test)."""
    exact = "!" in text and _NON_SPECIFIC_HINT.search(text) is not None
    if aliases:
        return ExactLoader if exact else Loader
    return ExactPlainLoader if exact else PlainLoader


# A shorthand tag running into `,`, `[` or `]`: go-yaml takes them into the tag (`[!foo, 1]`
# holds the string "1" tagged `!foo,`), libyaml 0.2.5 ends the tag before them; and a
# verbatim tag followed by `,`, which go-yaml refuses. The test is cheap and generous (a `!`
# where a tag may start); `go_tags` then asks libyaml's scanner.
_TAG_INTO_FLOW = re.compile(r"(?:^|(?<=[\s\[\]{},]))!(?:<[^>\s]*>,|(?:[A-Za-z0-9_-]*!)?"
                            r"[A-Za-z0-9_\-;/?:@&=+$.!~*'()%]*[,\[\]])", re.MULTILINE)
# go-yaml's tag: `!`, a handle (`!!`, `!name!`) or none, then its URI characters.
_GO_TAG = re.compile(r"!(?:([A-Za-z0-9_-]*)!)?([A-Za-z0-9_\-;/?:@&=+$,.!~*'()\[\]%]*)")
_HANDLES = {"!": "!", "!!": yamltags.YAML_TAG}
_PASSES = 64  # tags libyaml stops at (each pass mends the first, then all it scans past)


def go_tags(text: str) -> str:
    """`text` for libyaml to read its tags as go-yaml reads them: each shorthand tag that
    runs into `,`, `[` or `]` is written as the verbatim tag go-yaml makes of it (libyaml
    takes those characters in a verbatim tag); the text as it is when there is none."""
    if "!" not in text or _TAG_INTO_FLOW.search(text) is None:
        return text
    for _ in range(_PASSES):
        edits = _short_tags(text)
        if not edits:
            break
        for start, end, verbatim in reversed(edits):
            text = text[:start] + verbatim + text[end:]
    return text


def _short_tags(text: str) -> list[tuple[int, int, str]]:
    """(start, end, verbatim tag) of the tags libyaml's scanner ends before a `,` that
    go-yaml takes in, and of the one where it stops on a `[` or `]` go-yaml takes in; a
    ScannerError, as go-yaml's, at a verbatim tag followed by `,`."""
    edits: list[tuple[int, int, str]] = []
    handles, pending = dict(_HANDLES), dict(_HANDLES)
    refused: yaml.Token | None = None
    try:
        for token in yaml.scan(text, Loader=yaml.CSafeLoader):
            if isinstance(token, yaml.DirectiveToken) and token.name == "TAG":
                pending[token.value[0]] = token.value[1]
            elif isinstance(token, (yaml.DocumentStartToken, yaml.DocumentEndToken)):
                handles, pending = pending, dict(_HANDLES)
            elif isinstance(token, yaml.TagToken) and \
                    text[token.end_mark.index:token.end_mark.index + 1] == ",":
                if text.startswith("!<", token.start_mark.index):
                    refused = token
                    break
                edits += _verbatim(text, token.start_mark.index, handles)
    except yaml.scanner.ScannerError as exc:
        start, stop = exc.context_mark, exc.problem_mark
        if start is not None and stop is not None and text[start.index:start.index + 1] == \
                "!" and text[stop.index:stop.index + 1] in ("[", "]"):
            edits += _verbatim(text, start.index, handles)
    except yaml.YAMLError:
        pass
    if refused is not None:
        raise yaml.scanner.ScannerError("while scanning a tag", refused.start_mark,
                                        "did not find expected whitespace or line break",
                                        refused.end_mark)
    return edits


def _verbatim(text: str, start: int, handles: dict[str, str]) -> list[tuple[int, int, str]]:
    """The tag at `start` as go-yaml scans it, as a verbatim tag (none for a handle no
    %TAG defines: both parsers refuse it)."""
    found = _GO_TAG.match(text, start)
    if found is None:
        return []
    name, suffix = found.groups()
    prefix = "!" if name is None else handles.get(f"!{name}!")
    if prefix is None or "%" in prefix:
        return []
    return [(start, found.end(), f"!<{prefix}{suffix}>")]
