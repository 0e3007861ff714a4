"""Defaulting as the API server does it, from the CRD schemas' `default` values.

`apply_defaults(kind, doc)` returns a defaulted deep copy: for every object, each absent (or
null) property with a schema default gets a copy of it, then defaulting recurses into every
property, item and additional property, including the values just defaulted. This is the
algorithm of apiextensions-apiserver's structural defaulting. The trees come from the CRDs via
`compiler._crd_facts` (generated). Pure; called by `compiler.compile`.
"""

from __future__ import annotations

import contextlib
from typing import Any

from compiler._crd_facts import DEFAULTS, QUANTITIES
from compiler.data import copy_json
from compiler.quantity import QuantityError, canonical

KIND_KEYS = {
    "TrainJob": "trainjob",
    "TrainingRuntime": "trainingruntime",
    "ClusterTrainingRuntime": "clustertrainingruntime",
    "JobSet": "jobset",
}


def apply_defaults(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of `doc` with the CRD defaults of `kind` applied."""
    return default_in_place(kind, copy_json(doc))


def default_in_place(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    """Apply the CRD defaults of `kind` to `doc` itself and return it."""
    tree = DEFAULTS.get(KIND_KEYS[kind])
    if tree is not None:
        _default(doc, tree)
    return doc


def _default(value: Any, tree: dict[str, Any]) -> None:
    if isinstance(value, dict):
        props = tree.get("p", {})
        for name, sub in props.items():
            if "d" in sub and value.get(name) is None:
                value[name] = copy_json(sub["d"])
        extra = tree.get("a")
        for name, item in value.items():
            sub = props.get(name, extra)
            if sub is not None:
                _default(item, sub)
    elif isinstance(value, list) and "i" in tree:
        for item in value:
            _default(item, tree["i"])


def quantity_tree(kind: str, *path: str) -> dict[str, Any] | None:
    """The quantity-marker subtree of `kind` below the property path `path`."""
    tree: dict[str, Any] | None = QUANTITIES.get(KIND_KEYS[kind])
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
                with contextlib.suppress(QuantityError):
                    value[name] = canonical(item)
            else:
                canonicalize_quantities(item, sub)
    elif isinstance(value, list) and "i" in tree:
        for item in value:
            canonicalize_quantities(item, tree["i"])
    return value
