"""Keep only the parts of a policy input that a pack can read.

A pack's read set (`compiler.policy.cuelib.input_reads`, a static over-approximation) lists the
subtrees of `input` its rules can reach. Everything else is dropped before evaluation: it cannot
change the result, and equal remainders share one evaluation. Lists keep their length (an
element nobody reads becomes null), so indexes in result paths stay right.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from compiler.common.records import dataclass

ReadPath = list[str | None]


@dataclass
class Node:
    """One step of the read trie: read whole, iterated, or read further down."""

    whole: bool = False
    shape: bool = False
    children: dict[str | None, Node] = field(default_factory=dict)
    anything: Node | None = None
    named: dict[str, Node] = field(default_factory=dict)

    def freeze(self) -> Node:
        """Split the children into the wildcard and the named ones (after building)."""
        self.anything = self.children.get(None)
        self.named = {k: n for k, n in self.children.items() if k is not None}
        for child in self.children.values():
            child.freeze()
        return self


def trie(paths: list[ReadPath], shapes: list[ReadPath]) -> Node:
    """The read trie of a pack."""
    root = Node()
    for path, is_shape in [(p, False) for p in paths] + [(p, True) for p in shapes]:
        node = root
        for part in path:
            if node.whole:
                break
            node = node.children.setdefault(part, Node())
        if is_shape:
            node.shape = True
        else:
            node.whole, node.children = True, {}
    return root.freeze()


def _merge(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for key, value in b.items():
            out[key] = _merge(out[key], value) if key in out else value
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        pairs = zip(a, b, strict=True)
        return [y if x is None else x if y is None else _merge(x, y) for x, y in pairs]
    return a if a is not None else b


def prune(value: Any, node: Node) -> Any:
    """`value` cut down to what `node` reads."""
    if node.whole:
        return value
    if isinstance(value, dict):
        return _prune_dict(value, node)
    if isinstance(value, list):
        return _prune_list(value, node)
    return value


def _prune_dict(value: dict[str, Any], node: Node) -> dict[str, Any]:
    anything = node.anything
    if anything is None:
        return {key: value[key] if child.whole else prune(value[key], child)
                for key, child in node.named.items() if key in value}
    out: dict[str, Any] = {}
    for key, item in value.items():
        named = node.named.get(key)
        out[key] = prune(item, anything) if named is None else \
            _merge(prune(item, named), prune(item, anything))
    return out


def _prune_list(value: list[Any], node: Node) -> list[Any]:
    anything, named = node.anything, node.named
    if anything is None and not named:
        return [] if not node.shape else [_shape(item) for item in value]
    out: list[Any] = []
    for index, item in enumerate(value):
        own = named.get(str(index)) if named else None
        if own is None and anything is None:
            out.append(None)
        elif own is None:
            out.append(prune(item, anything))  # type: ignore[arg-type]
        elif anything is None:
            out.append(prune(item, own))
        else:
            out.append(_merge(prune(item, own), prune(item, anything)))
    return out


def _shape(item: Any) -> Any:
    """An element iterated over whose content nobody reads."""
    return {} if isinstance(item, dict) else [] if isinstance(item, list) else item
