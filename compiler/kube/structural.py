"""One structural pass over an input, against the compiled CRD schema of its kind.

`sanitize(kind, doc)` walks a TrainJob or runtime once against the types its CRD declares
(the nodes of `compiler.kube.schematree`, the same tree defaulting and validation use) and returns
a new document and the diagnostics:

- null values are dropped and fields the CRD does not declare are pruned with a warning, as
  the API server does before defaulting (so upstream never sees them);
- a wrong JSON type or a missing required property is an error with its field path, so the
  core never sees a malformed document.

Full schema, enum and CEL validation belong to `tjc validate`; `compiler.kube.admitwalk` runs this
walk with defaulting and the full schema check in the same pass. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from compiler.common.diagnostics import Diagnostic, Path, Severity, error
from compiler.common.jsondata import copy_without_nulls
from compiler.kube.quantity import is_quantity
from compiler.kube.releases import DEFAULT
from compiler.kube.schematree import Node, root

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "ios": (int, str),
}
SCALARS = frozenset({"string", "integer", "number", "boolean", "ios"})
_NAMES = {dict: "object", list: "array", str: "string", int: "integer", float: "number",
          bool: "boolean"}
_ARTICLES = {"ios": "an integer or string", "object": "an object", "array": "an array",
             "integer": "an integer", "string": "a string", "boolean": "a boolean",
             "number": "a number"}
UNKNOWN_FIELD = ("; kubectl apply refuses it (strict field validation); with "
                 "--field-validation=warn or ignore it is dropped and has no effect")
UNKNOWN_RULE = "TJC-UNKNOWN-FIELD"
# ObjectMeta's fields (k8s.io/apimachinery meta/v1): the CRDs leave metadata undetailed
OBJECT_META = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields"})


def unknown_field(name: str, known: Iterable[str], path: Path, subject: str) -> Diagnostic:
    """The warning for a field the schema does not declare, with the declared field it most
    likely means (`numNode`: `numNodes`); admission makes it an error under strict field
    validation (`field_validation`)."""
    import difflib  # only when a field is unknown: start-up imports stay few

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75) \
        if isinstance(name, str) else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return Diagnostic(Severity.WARNING, UNKNOWN_RULE, "unknown field" + hint + UNKNOWN_FIELD,
                      path, subject=subject)


class Walk:
    """The state of one sanitize pass."""

    def __init__(self, subject: str) -> None:
        self.subject = subject
        self.out: list[Diagnostic] = []

    def value(self, value: Any, node: Node, path: Path) -> Any:
        expected = node.stype
        if expected is not None and type(value) not in node.sexact \
                and not type_ok(value, expected):
            self.type_error(value, expected, path)
            return value
        if isinstance(value, dict):
            return self.mapping(value, node, path)
        if isinstance(value, list):
            return self.listed(value, node, path)
        return value

    def mapped(self, item: Any, sub: Node, path: Path) -> Any:
        """One property value of a mapping (not null, declared)."""
        if isinstance(item, (dict, list)):
            return self.value(item, sub, path)
        expected = sub.stype
        if expected is not None and type(item) not in sub.sexact:
            item = self.scalar(item, expected, path)
        if sub.quantity:
            self.quantity(item, path)
        return item

    def is_metadata(self, node: Node, path: Path) -> bool:
        """Whether `node` is kept whole: it preserves unknown fields, or it is the root's
        undetailed `metadata` (the API server checks ObjectMeta itself)."""
        return node.keep or (not node.sprops and not node.sextra and path == ("metadata",))

    def scalar(self, value: Any, expected: str, path: Path) -> Any:
        """Check a scalar of an unexpected Python type; a whole float counts as an integer
        (JSON has one number type; the API server accepts 2.0 where an integer is due)."""
        if isinstance(value, float) and value.is_integer() and expected in ("integer", "ios"):
            return int(value)
        if not type_ok(value, expected):
            self.type_error(value, expected, path)
        return value

    def quantity(self, value: Any, path: Path) -> None:
        if not is_quantity(value):
            self.out.append(error("TJC-SCHEMA-QUANTITY", f"{value!r} is not a resource quantity; "
                                  "expected a number with an optional suffix such as 500m, 2 or "
                                  "4Gi", path, subject=self.subject))

    def type_error(self, value: Any, expected: str, path: Path) -> None:
        got = _NAMES.get(type(value), type(value).__name__)
        self.out.append(error("TJC-SCHEMA-TYPE", f"expected {_ARTICLES[expected]}, got {got}",
                              path, subject=self.subject))

    def listed(self, value: list[Any], node: Node, path: Path) -> Any:
        """A list of the right type, walked against `node`'s items."""
        return self.sequence(value, node.item(), path)

    def sequence(self, value: list[Any], items: Node | None, path: Path) -> Any:
        if items is None:
            return copy_without_nulls(value)
        expected = items.stype
        if expected in SCALARS:
            assert expected is not None
            allowed = items.sexact
            return [item if type(item) in allowed else self.scalar(item, expected, (*path, i))
                    for i, item in enumerate(value) if item is not None]
        return [self.value(item, items, (*path, i)) for i, item in enumerate(value)
                if item is not None]

    def metadata_fields(self, value: dict[str, Any], path: Path) -> None:
        """The root's ObjectMeta is kept whole; a field ObjectMeta does not have is unknown."""
        if path == ("metadata",):
            for name in value:
                if name not in OBJECT_META:
                    self.out.append(unknown_field(name, OBJECT_META, (*path, name),
                                                  self.subject))

    def mapping(self, value: dict[str, Any], node: Node, path: Path) -> Any:
        if self.is_metadata(node, path):
            self.metadata_fields(value, path)
            return copy_without_nulls(value)
        out: dict[str, Any] = {}
        props = node.props
        for name, item in value.items():
            if item is None:
                continue
            sub = props.get(name) or node.child(name)
            if sub is None:
                self.out.append(unknown_field(name, node.declared, (*path, name), self.subject))
                continue
            kind = type(item)
            if kind in sub.quiet:  # nothing to say about it, here or in admission
                out[name] = item
            elif kind is dict and dict in sub.sexact:  # `value`, its type known to be right
                out[name] = self.mapping(item, sub, (*path, name))
            elif kind is list and list in sub.sexact:
                out[name] = self.listed(item, sub, (*path, name))
            else:
                out[name] = self.mapped(item, sub, (*path, name))
        for name in node.srequired:
            if name not in out:
                self.out.append(error("TJC-SCHEMA-REQUIRED", f"required field {name!r} is "
                                      "missing", path, subject=self.subject))
        return out


def sanitize(kind: str, doc: dict[str, Any], *, subject: str, release: str = DEFAULT
             ) -> tuple[dict[str, Any], list[Diagnostic]]:
    """A pruned copy of `doc` and every structural problem found in it (against the CRD of
    the Kubeflow Trainer `release`)."""
    walk = Walk(subject)
    out = walk.mapping(doc, root(kind, release), ()) if isinstance(doc, dict) else {}
    return out, walk.out


def type_ok(value: Any, expected: str) -> bool:
    """JSON type membership as the structural pass sees it (no float for an integer)."""
    if isinstance(value, bool):
        return expected == "boolean"
    if expected not in _JSON_TYPES:
        return True
    return isinstance(value, _JSON_TYPES[expected]) and not isinstance(value, bool)
