"""The structural pass, CRD defaulting and the schema check of an object in one walk.

`admit(kind, doc)` gives what `structural.sanitize`, then `defaults.default_in_place`, then
`validate.schema.validate` give one after the other: the pruned and defaulted object, the
structural diagnostics (in walk order) and the schema diagnostics (sorted by path, then rule),
walking the document once over the kind's compiled schema tree (`compiler.kube.schematree`). Where
the structural pass has already reported a problem (a wrong type, a missing required field)
the schema check does not report it again. A subtree the structural pass keeps whole (ObjectMeta,
preserved unknown fields) and a list with null items (whose indices the pruning shifts) are
checked whole once pruned and defaulted. Pure; called by `compiler.core.admission.check_object`.
"""

from __future__ import annotations

from typing import Any

from compiler.common.diagnostics import Diagnostic, Path
from compiler.common.jsondata import copy_json, copy_without_nulls
from compiler.kube.defaults import default_value
from compiler.kube.releases import DEFAULT
from compiler.kube.schema import order
from compiler.kube.schematree import Node, root
from compiler.kube.structural import SCALARS, Walk, type_ok


class _Admit(Walk):
    """A sanitize walk that also defaults and checks every value against its node."""

    def __init__(self, subject: str) -> None:
        super().__init__(subject)
        self.found: list[Diagnostic] = []

    def value(self, value: Any, node: Node, path: Path) -> Any:
        expected = node.stype
        if expected is not None and type(value) not in node.sexact \
                and not type_ok(value, expected):
            self.type_error(value, expected, path)  # the schema check says the same
            return value
        if isinstance(value, dict):
            return self.mapping(value, node, path)
        if isinstance(value, list):
            return self.listed(value, node, path)
        if type(value) not in node.skip:
            node.check(value, path, self.found)
        return value

    def whole(self, value: Any, node: Node, path: Path) -> Any:
        """A value the walk does not enter: defaulted, then checked whole."""
        if node.has_defaults():
            default_value(value, node)
        node.check(value, path, self.found)
        return value

    def checked_scalar(self, item: Any, node: Node, path: Path) -> Any:
        """A scalar: the structural type check, then (when that passes) the schema's."""
        expected = node.stype
        if expected is not None and type(item) not in node.sexact:
            before = len(self.out)
            item = self.scalar(item, expected, path)
            if len(self.out) != before:
                return item
        if type(item) not in node.skip:
            node.check(item, path, self.found)
        return item

    def mapping(self, value: dict[str, Any], node: Node, path: Path) -> Any:
        if self.is_metadata(node, path):
            self.metadata_fields(value, path)
            return self.whole(copy_without_nulls(value), node, path)
        out = super().mapping(value, node, path)
        props = node.props
        for name, default in node.defaults:
            if out.get(name) is None:
                sub = props.get(name) or node.child(name)
                out[name] = copy_json(default)
                if sub is not None:
                    self.whole(out[name], sub, (*path, name))
        for check in node.checks:  # its type is right; required fields reported already
            check(out, path, self.found)
        return out

    def mapped(self, item: Any, sub: Node, path: Path) -> Any:
        """One property value of a mapping (the base walk's scalar branch, checked too)."""
        if isinstance(item, (dict, list)):
            return self.value(item, sub, path)
        item = self.checked_scalar(item, sub, path)
        if sub.quantity:
            self.quantity(item, path)
        return item

    def listed(self, value: list[Any], node: Node, path: Path) -> Any:
        if any(item is None for item in value):
            plain = Walk(self.subject)
            plain.out = self.out
            return self.whole(plain.sequence(value, node.item(), path), node, path)
        items = node.item()
        if items is None:
            out = copy_without_nulls(value)
        elif items.stype in SCALARS:
            quiet = items.quiet
            out = [item if type(item) in quiet else self.checked_scalar(item, items, (*path, i))
                   for i, item in enumerate(value)]
        else:
            out = [self.value(item, items, (*path, i)) for i, item in enumerate(value)]
        for check in node.checks:
            check(out, path, self.found)
        node.list_rules(out, path, self.found)
        return out


def admit(kind: str, doc: Any, *, subject: str = "document", release: str = DEFAULT
          ) -> tuple[dict[str, Any], list[Diagnostic], list[Diagnostic]]:
    """The pruned, defaulted object; its structural diagnostics; its schema diagnostics
    (against the CRD of the Kubeflow Trainer `release`)."""
    walk = _Admit(subject)
    node = root(kind, release)
    data = walk.mapping(doc, node, ()) if isinstance(doc, dict) else walk.whole({}, node, ())
    walk.found.sort(key=order)
    return data, walk.out, walk.found
