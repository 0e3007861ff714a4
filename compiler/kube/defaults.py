"""Defaulting as the API server does it, from the CRD schemas' `default` values.

`apply_defaults(kind, doc)` returns a defaulted deep copy: for every object, each absent (or
null) property with a schema default gets a copy of it, then defaulting recurses into every
property, item and additional property, including the values just defaulted. This is the
algorithm of apiextensions-apiserver's structural defaulting. The defaults and the quantity
fields come from the compiled CRD schema (`compiler.kube.schematree`). Pure; called by
`compiler.core.compile`.
"""

from __future__ import annotations

from typing import Any

from compiler.common.jsondata import copy_json
from compiler.kube.quantity import QuantityError, canonical
from compiler.kube.releases import DEFAULT
from compiler.kube.schematree import KIND_KEYS, Node, quantity_facts, root

__all__ = ["KIND_KEYS", "apply_defaults", "canonicalize_quantities", "default_in_place",
           "default_value", "quantity_tree"]


def apply_defaults(kind: str, doc: dict[str, Any], release: str = DEFAULT) -> dict[str, Any]:
    """Return a copy of `doc` with the CRD defaults of `kind` (in `release`) applied."""
    return default_in_place(kind, copy_json(doc), release)


def default_in_place(kind: str, doc: dict[str, Any], release: str = DEFAULT) -> dict[str, Any]:
    """Apply the CRD defaults of `kind` (in the Kubeflow Trainer `release`) to `doc` itself
    and return it."""
    node = root(kind, release)
    if node.has_defaults():
        default_value(doc, node)
    return doc


def default_value(value: Any, node: Node) -> None:
    """Apply, in place, the defaults of `node` (a compiled schema) and below to `value`."""
    if isinstance(value, dict):
        for name, default in node.defaults:
            if value.get(name) is None:
                value[name] = copy_json(default)
        props = node.props
        for name, item in value.items():
            if isinstance(item, (dict, list)):
                sub = props.get(name) or node.child(name)
                if sub is not None and sub.has_defaults():
                    default_value(item, sub)
    elif isinstance(value, list):
        items = node.item()
        if items is not None and items.has_defaults():
            for item in value:
                default_value(item, items)


def quantity_tree(kind: str, *path: str, release: str = DEFAULT) -> dict[str, Any] | None:
    """The quantity-marker subtree of `kind` (in `release`) below the property path `path`."""
    tree: dict[str, Any] | None = quantity_facts(kind, release)
    for name in path:
        if tree is None:
            return None
        tree = tree.get("p", {}).get(name)
    return tree


def canonicalize_quantities(value: Any, tree: dict[str, Any] | None) -> Any:
    """Rewrite, in place, every quantity field under `tree` to its canonical string.

    A value that is not a valid quantity is left as it is (validation reports it).
    """
    if tree is None:
        return value
    if isinstance(value, dict):
        props, extra = tree.get("p", {}), tree.get("a")
        for name, item in value.items():
            sub = props.get(name, extra)
            if sub is None:
                continue
            if sub.get("q") and isinstance(item, (str, int, float)):
                try:  # noqa: SIM105 (a suppress context per quantity costs more than the parse)
                    value[name] = canonical(item)
                except QuantityError:
                    pass
            else:
                canonicalize_quantities(item, sub)
    elif isinstance(value, list) and "i" in tree:
        for item in value:
            canonicalize_quantities(item, tree["i"])
    return value
