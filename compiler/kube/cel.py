"""CEL validation: the `x-kubernetes-validations` rules of the CRDs, evaluated offline.

`validate(kind, doc, old=None)` evaluates every rule of the CRD schema of `kind` (TrainJob,
TrainingRuntime, ClusterTrainingRuntime or JobSet; `schemas/<kind>.json`) at every location of
`doc` where the schema declares it, the way the API server's CRD validator does:

- `self` is the value at that location; at the root of the object `self.metadata` holds only
  `name` and `generateName`, and a missing `name` with a `generateName` is generated first, as
  the API server does before it validates a create.
- A rule that mentions `oldSelf` is a transition rule: it is evaluated only when `old` is given
  and an old value correlates with the location (object properties by name, map values by key,
  items of `x-kubernetes-list-type: map` lists by their map keys; never through atomic lists or
  sets). With `optionalOldSelf` it is also evaluated without one, `oldSelf` being an optional.
  Lists of type set or map compare equal regardless of order.
- Ratcheting: on an update, the rules without `oldSelf` are skipped where the value equals its
  correlated old value (Kubernetes >= 1.30).
- A rule that evaluates to false gives an error with the rule's `message` (or its
  `messageExpression` result, or `failed rule: <rule>`), at the location plus its `fieldPath`,
  its `reason` (other than the default FieldValueInvalid) leading the message. A rule whose
  evaluation fails reports the runtime error as Kubernetes does (TJC-CEL-ERROR); a rule the
  runtime cannot compile is a warning (TJC-CEL-UNSUPPORTED). The rule id of a failed rule comes
  from `RULE_IDS`, keyed by the rule text, with `TJC-CEL` for a rule not in the table.

Documents come sanitized and defaulted (`compiler.kube.structural.sanitize`,
`compiler.kube.defaults.default_in_place`). The CEL runtime is Google's cel-cpp through
`cel-expr-python` (RE2 regular expressions, standard CEL); it is imported on first use, each
rule is compiled once per process (and kept compiled between runs, `celstore`), and each
kind's schema is read once, lazily (`compiler.kube.schematree`). For speed a rule that reads
`self` only as `self.<name>...` gets just those properties, results on scalar values are
memoised, and where a location has several rules that read `self` alone they are first
evaluated together, as one conjunction on one `self` (`_Group`): only when that is not `true`
is each rule evaluated on its own; before either, known rules (together or alone) are
confirmed in Python (`celnative`), so the usual input needs no CEL runtime at all. All four
give the same answers as the plain evaluation.
Not covered: the cost budget, `format` conversions of strings (date-time, duration) and the
Kubernetes CEL libraries beyond standard CEL, which these CRDs' rules do not use (a rule that
needs one cannot compile and is reported as unsupported). Pure: documents in, diagnostics
out; never raises. Called by the validate pipeline (`tjc validate`, and `tjc render` before it
compiles).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import re
from collections.abc import Mapping
from dataclasses import field
from typing import Any

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.common.diagnostics import Path as FieldPath
from compiler.common.records import dataclass
from compiler.kube import celnative, celstore
from compiler.kube.celstore import ProgramStore, library_stamp
from compiler.kube.releases import DEFAULT
from compiler.kube.schematree import KIND_KEYS, load_schema, schema_source

SUBJECT = "document"
GENERIC_ID = "TJC-CEL"
ERROR_ID = "TJC-CEL-ERROR"
UNSUPPORTED_ID = "TJC-CEL-UNSUPPORTED"

_NAME_FORMAT = "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')"
_STARTUP = ("!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && "
            "self.replicatedJobs.exists(x, has(x.dependsOn)))")
_ONE_POLICY = ("[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),"
               "has(self.flux)].filter(x, x).size() <= 1")
_CLAIM_NS = ("self.templates.all(t, !has(t.metadata.namespace) || "
             "size(t.metadata.namespace) == 0)")

RULE_IDS: Mapping[str, str] = {
    # TrainJob (Kubeflow Trainer v2.3.0)
    _NAME_FORMAT: "TJC-CEL-NAME-FORMAT",
    "size(self.metadata.name) <= 63": "TJC-CEL-NAME-LENGTH",
    "self == oldSelf": "TJC-CEL-IMMUTABLE",
    "self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']":
        "TJC-CEL-MANAGED-BY",
    "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')": "TJC-CEL-STORAGE-URI",
    "has(self.lastUpdatedTime)": "TJC-CEL-TRAINER-STATUS",
    # TrainingRuntime and ClusterTrainingRuntime
    _ONE_POLICY: "TJC-CEL-ONE-ML-POLICY",
    "self >= 1": "TJC-CEL-NUM-PROC-PER-NODE",
    "!self.exists(c, c == 'node')": "TJC-CEL-ENV-INJECTION-NODE",
    # JobSet (v0.12.0), also embedded in the runtimes
    _STARTUP: "TJC-CEL-STARTUP-DEPENDS-ON",
    _CLAIM_NS: "TJC-CEL-CLAIM-NAMESPACE",
}

# Rules on the object root that are about one field and set no fieldPath: report them at that
# field, so the location points at the line to fix (Kubernetes reports them at the root).
IMPLIED_FIELD: Mapping[str, FieldPath] = {
    "TJC-CEL-NAME-FORMAT": ("metadata", "name"),
    "TJC-CEL-NAME-LENGTH": ("metadata", "name"),
}

_REASONS = {
    "FieldValueForbidden": "forbidden: ",
    "FieldValueRequired": "required value: ",
    "FieldValueDuplicate": "duplicate value: ",
}
_STRING_LITERALS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_OLD_SELF = re.compile(r"\boldSelf\b")
_SELF_USE = re.compile(r"(?<![\w.])self\b(?:\s*\.\s*([A-Za-z_]\w*)(\s*\()?)?")
_SCALARS = (str, int, float, bool, type(None))
_MEMO_SIZE = 4096
_FIELD_STEP = re.compile(r"\.([^.\[\]]+)|\['((?:[^'\\]|\\.)*)'\]|\[(\d+)\]")
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_NO_SUCH_KEY = re.compile(r'^Key not found in map ?: ?"?(.*?)"?$')
_NO_OVERLOAD = re.compile(r"^No matching overloads found ?: ?(.*)$")
_GENERATED_SUFFIX = "xxxxx"  # names.SimpleNameGenerator: base[:58] + 5 random characters
_MAX_GENERATE_BASE = 58


@dataclass(frozen=True)
class _Rule:
    """One `x-kubernetes-validations` entry, as declared at one schema node."""

    rule: str
    rule_id: str
    message: str
    message_expression: str
    field_path: FieldPath
    reason: str
    transition: bool
    optional_old: bool
    fields: frozenset[str] | None  # the only properties of `self` the rule reads, if known


@dataclass(frozen=True)
class _Group:
    """The rules of one location that are evaluated together first: those that read `self`
    alone (no `oldSelf`, no `optionalOldSelf`), when there are two or more.

    `source` is their conjunction, each rule in its own parentheses, a line break before the
    closing one so that a trailing `//` comment stays inside it. CEL's `&&` is commutative
    over errors: it is `true` exactly when every operand evaluates to `true`, and otherwise
    false or an error (a false operand wins over an error, either order). So `true` means no
    rule of the group reports anything; anything else sends each rule to its own evaluation,
    which gives the messages, runtime errors and order that it alone gives. `fields` is what
    the rules read of `self` together (None: all of it); each rule reads only its own. The API
    server's cost budget, which counts each rule, is not modelled, so nothing depends on how
    the evaluations are split; rules with `optionalOldSelf` get their own variables and are
    left out.
    """

    rules: tuple[_Rule, ...]
    source: str
    fields: frozenset[str] | None
    texts: tuple[str, ...]  # the rules' texts
    native: bool  # each rule has a check in `celnative`, tried before the CEL runtime


def _group(rules: tuple[_Rule, ...]) -> _Group | None:
    members = tuple(r for r in rules if not r.transition and not r.optional_old)
    if len(members) < 2:
        return None
    fields: frozenset[str] | None = frozenset()
    for rule in members:
        fields = None if fields is None or rule.fields is None else fields | rule.fields
    texts = tuple(r.rule for r in members)
    return _Group(rules=members, source=" && ".join(f"({text}\n)" for text in texts),
                  fields=fields, texts=texts,
                  native=all(text in celnative.CHECKS for text in texts))


@dataclass
class _Node:
    """A schema node on the way to a rule: its rules and the children that lead to more."""

    schema: dict[str, Any]
    rules: tuple[_Rule, ...] = ()
    props: dict[str, _Node] = field(default_factory=dict)
    items: _Node | None = None
    extra: _Node | None = None
    root: bool = False
    without_old: bool = False  # the subtree holds a rule evaluated without an old value
    group: _Group | None = field(init=False, compare=False)  # derived from `rules`

    def __post_init__(self) -> None:
        self.group = _group(self.rules)


@dataclass
class _Run:
    """The state of one `validate` call."""

    out: list[Diagnostic] = field(default_factory=list)


@dataclass(frozen=True)
class _Program:
    """A compiled rule, or why it could not be compiled."""

    program: Any = None
    problem: str = ""


_PLANS: dict[str, _Node | str] = {}  # a kind's plan (`<key>@<release>` for an older release),
# or why its schema cannot be read
_PROGRAMS: dict[tuple[str, bool], _Program] = {}
_GROUP_PROGRAMS: dict[str, _Program | None] = {}  # by `_Group.source`: None, evaluate alone
_UNORDERED: dict[int, bool] = {}
_RUNTIME: list[Any] = []  # [cel module, env, program store] once loaded
_ENVIRONMENT = "self oldSelf __old: dyn; __hasOld: bool; extensions: optional, bindings"
_MEMO: dict[tuple[Any, ...], tuple[Any, str]] = {}  # results of rules on scalar values


def validate(kind: str, doc: dict[str, Any], old: dict[str, Any] | None = None,
             release: str = DEFAULT) -> list[Diagnostic]:
    """Every CEL rule of the CRD of `kind` (in the Kubeflow Trainer `release`) that `doc`
    (updated from `old`, if given) breaks."""
    plan = _plan(kind, release)
    if isinstance(plan, str):
        return [Diagnostic(Severity.WARNING, UNSUPPORTED_ID, plan, subject=SUBJECT)]
    if not isinstance(doc, dict):
        return []
    run = _Run()
    has_old = isinstance(old, dict)
    _walk(run, plan, doc, old if has_old else None, has_old, ())
    if _RUNTIME:
        _RUNTIME[2].save()
    return run.out


# --- the plan: the schema pruned to the paths that lead to rules -----------------------------

def _plan(kind: str, release: str = DEFAULT) -> _Node | str:
    key = KIND_KEYS.get(kind) if isinstance(kind, str) else None
    if key is None:
        return (f"kind {kind!r} has no CRD schema to take CEL rules from; expected one of "
                f"{', '.join(KIND_KEYS)}")
    at = key if release == DEFAULT else f"{key}@{release}"
    if at not in _PLANS:
        _PLANS[at] = _load_plan(kind, release)
    return _PLANS[at]


def _load_plan(kind: str, release: str) -> _Node | str:
    key = KIND_KEYS[kind]
    try:
        source = schema_source(kind, release)
        stored = celstore.read_plan(key, source)
        if stored is not None:
            with contextlib.suppress(TypeError, ValueError, AttributeError):
                return _decode_plan(stored)
        schema = load_schema(kind, release)  # the JSON the schema tree is built from
    except (OSError, ValueError) as exc:
        return f"the CRD schema {key}.json cannot be read ({exc}); CEL rules are not checked"
    node = _build(schema) if isinstance(schema, dict) else None
    if node is None:
        return _Node(schema={}, root=True)
    node.root = True
    celstore.write_plan(key, source, _encode_plan(node))
    return node


def _encode_plan(node: _Node) -> tuple[Any, ...]:
    """A plan as plain data for the start-up cache (`celstore`)."""
    return (node.schema, tuple((r.rule, r.rule_id, r.message, r.message_expression,
                                r.field_path, r.reason, r.transition, r.optional_old, r.fields)
                               for r in node.rules),
            {name: _encode_plan(child) for name, child in node.props.items()},
            None if node.items is None else _encode_plan(node.items),
            None if node.extra is None else _encode_plan(node.extra),
            node.root, node.without_old)


def _decode_plan(data: Any) -> _Node:
    """The plan `_encode_plan` stored (raises TypeError or ValueError on another shape)."""
    schema, rules, props, items, extra, root, without_old = data
    if not isinstance(schema, dict) or not isinstance(props, dict):
        raise TypeError("not a stored plan")
    return _Node(schema=schema, rules=tuple(_Rule(*rule) for rule in rules),
                 props={str(name): _decode_plan(child) for name, child in props.items()},
                 items=None if items is None else _decode_plan(items),
                 extra=None if extra is None else _decode_plan(extra),
                 root=bool(root), without_old=bool(without_old))


def _build(schema: dict[str, Any]) -> _Node | None:
    """The plan node of `schema`, or None when no rule sits at or below it."""
    node = _Node(schema=schema, rules=tuple(_rules(schema)))
    for name, sub in (schema.get("properties") or {}).items():
        child = _build(sub) if isinstance(sub, dict) else None
        if child is not None:
            node.props[name] = child
    items = schema.get("items")
    node.items = _build(items) if isinstance(items, dict) else None
    extra = schema.get("additionalProperties")
    node.extra = _build(extra) if isinstance(extra, dict) else None
    children = [*node.props.values(), node.items, node.extra]
    if not node.rules and not any(children):
        return None
    node.without_old = any(not r.transition or r.optional_old for r in node.rules) or any(
        c.without_old for c in children if c is not None)
    return node


def _rules(schema: dict[str, Any]) -> list[_Rule]:
    out: list[_Rule] = []
    for entry in schema.get("x-kubernetes-validations") or ():
        if not isinstance(entry, dict) or not isinstance(entry.get("rule"), str):
            continue
        text = entry["rule"]
        message_expression = str(entry.get("messageExpression") or "")
        out.append(_Rule(
            rule=text,
            rule_id=RULE_IDS.get(text.strip(), GENERIC_ID),
            message=str(entry.get("message") or "").strip(),
            message_expression=message_expression,
            field_path=_field_path(str(entry.get("fieldPath") or ""))
            or IMPLIED_FIELD.get(RULE_IDS.get(text.strip(), GENERIC_ID), ()),
            reason=str(entry.get("reason") or ""),
            transition=_OLD_SELF.search(_STRING_LITERALS.sub("''", text)) is not None,
            optional_old=entry.get("optionalOldSelf") is True,
            fields=_fields_read(text, message_expression),
        ))
    return out


def _fields_read(*texts: str) -> frozenset[str] | None:
    """The properties of `self` that expressions read when they use `self` only as
    `self.<name>...`.

    None when one uses `self` whole (compares it, calls a method on it, indexes it): then it
    must see all of it. Evaluating on the projection gives the same result, faster.
    """
    names: set[str] = set()
    for text in texts:
        for use in _SELF_USE.finditer(_STRING_LITERALS.sub("''", text)):
            if use.group(1) is None or use.group(2):
                return None
            names.add(use.group(1))
    return frozenset(names)


def _field_path(text: str) -> FieldPath:
    """`.a['b.c'][0]` as ("a", "b.c", 0); an unreadable path adds nothing."""
    steps: list[str | int] = []
    pos = 0
    while pos < len(text):
        match = _FIELD_STEP.match(text, pos)
        if match is None:
            return ()
        name, quoted, index = match.groups()
        if index is not None:
            steps.append(int(index))
        else:
            steps.append(name if name is not None else re.sub(r"\\(.)", r"\1", quoted))
        pos = match.end()
    return tuple(steps)


# --- the walk: every location of the document that the plan reaches ---------------------------

def _walk(run: _Run, node: _Node, value: Any, old: Any, has_old: bool, path: FieldPath) -> None:
    if node.rules:
        _check_location(run, node, value, old, has_old, path)
    if isinstance(value, dict):
        _walk_object(run, node, value, old if has_old else None, path)
    elif isinstance(value, list) and node.items is not None:
        _walk_list(run, node, node.items, value, old if has_old else None, path)


def _walk_object(run: _Run, node: _Node, value: dict[str, Any], old: Any,
                 path: FieldPath) -> None:
    olds: dict[str, Any] = old if isinstance(old, dict) else {}
    for name, child in node.props.items():
        if name in value:
            child_has_old = name in olds
            if child.without_old or child_has_old:
                _walk(run, child, value[name], olds.get(name), child_has_old, (*path, name))
    extra = node.extra
    if extra is not None:
        for name, item in value.items():
            if name not in node.props and (extra.without_old or name in olds):
                _walk(run, extra, item, olds.get(name), name in olds, (*path, name))


def _walk_list(run: _Run, node: _Node, items: _Node, value: list[Any], old: Any,
               path: FieldPath) -> None:
    keys = node.schema.get("x-kubernetes-list-map-keys") or ()
    olds: dict[Any, Any] | None = None
    if (isinstance(old, list) and keys and node.schema.get("x-kubernetes-list-type") == "map"):
        olds = {}
        for item in old:
            if isinstance(item, dict):
                olds.setdefault(_map_key(item, keys), item)
    if olds is None and not items.without_old:
        return
    for index, item in enumerate(value):
        correlated = None
        if olds is not None and isinstance(item, dict):
            correlated = olds.get(_map_key(item, keys))
        item_has_old = correlated is not None
        if items.without_old or item_has_old:
            _walk(run, items, item, correlated, item_has_old, (*path, index))


def _map_key(item: dict[str, Any], keys: Any) -> str:
    return json.dumps([item.get(k) for k in keys], sort_keys=True, default=str)


# --- one location: its rules evaluated on `self` (and `oldSelf`) --------------------------------

def _check_location(run: _Run, node: _Node, value: Any, old: Any, has_old: bool,
                    path: FieldPath) -> None:
    ratcheted = has_old and _same(value, old)
    passed: tuple[_Rule, ...] = ()
    if node.group is not None and not ratcheted and _group_passes(node, node.group, value):
        passed = node.group.rules
    transition: dict[str, Any] | None = None
    for rule in node.rules:
        if rule in passed:
            continue
        if rule.transition:
            if not has_old and not rule.optional_old:
                continue
            if transition is None:
                transition = _transition_data(node, value, old, has_old)
            data = transition if rule.optional_old else {
                "self": transition["self"], "oldSelf": transition["oldSelf"]}
        else:
            if ratcheted:
                continue
            data = {"self": _self_value(node, value, rule.fields)}
            if rule.rule in celnative.CHECKS and celnative.holds((rule.rule,), data["self"]):
                continue  # (a check of `celnative` says it holds: no CEL runtime needed)
        diagnostic = _check_rule(rule, data, path)
        if diagnostic is not None:
            run.out.append(diagnostic)


def _group_passes(node: _Node, group: _Group, value: Any) -> bool:
    """Whether every rule of `group` holds on `value` (a check in `celnative`, or one CEL
    evaluation; False also when the rules cannot be evaluated together)."""
    self_value = _self_value(node, value, group.fields)
    if group.native and celnative.holds(group.texts, self_value):
        return True
    program = _program_of_group(group)
    if program is None:
        return False
    outcome, failure = _run(program, {"self": self_value})
    return not failure and outcome is True


def _program_of_group(group: _Group) -> _Program | None:
    """The group's compiled conjunction, or None when a rule does not compile on its own (it
    is reported as unsupported, and its text could change meaning inside the conjunction) or
    the conjunction does not (a rule that is not a bool)."""
    if group.source not in _GROUP_PROGRAMS:
        program: _Program | None = None
        if not any(_program(rule.rule, False).problem for rule in group.rules):
            program = _program(group.source, False)
        _GROUP_PROGRAMS[group.source] = None if program is None or program.problem else program
    return _GROUP_PROGRAMS[group.source]


def _same(value: Any, old: Any) -> bool:
    try:
        return bool(value == old)
    except Exception:  # never raise on odd input
        return False


def _self_value(node: _Node, value: Any, fields: frozenset[str] | None = None) -> Any:
    """`self` at a location: the value, at the root the object as CEL rules see it, cut down
    to `fields` when the rule reads no other property."""
    if not isinstance(value, dict):
        return value
    if fields is not None:
        value = {k: value[k] for k in fields if k in value}  # a new dict
    elif node.root:
        value = dict(value)
    if not node.root:
        return value
    meta = value.get("metadata")
    if isinstance(meta, dict):
        visible = {k: meta[k] for k in ("name", "generateName") if k in meta}
        base = visible.get("generateName")
        if "name" not in visible and isinstance(base, str) and base:
            visible["name"] = base[:_MAX_GENERATE_BASE] + _GENERATED_SUFFIX
        value["metadata"] = visible
    return value


def _transition_data(node: _Node, value: Any, old: Any, has_old: bool) -> dict[str, Any]:
    """`self` and `oldSelf`; `__old` and `__hasOld` build the optional of `optionalOldSelf`."""
    new_self = _ordered(_self_value(node, value), node.schema)
    old_self = _ordered(_self_value(node, old), node.schema) if has_old else None
    return {"self": new_self, "oldSelf": old_self, "__old": old_self, "__hasOld": has_old}


def _ordered(value: Any, schema: Any) -> Any:
    """`value` with its set and map lists in a canonical order, so that equality ignores it."""
    if not isinstance(schema, dict) or not _unordered(schema):
        return value
    if isinstance(value, list):
        items = schema.get("items")
        out = [_ordered(v, items) for v in value]
        kind = schema.get("x-kubernetes-list-type")
        if kind == "set":
            out.sort(key=_sort_key)
        elif kind == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or ()
            out.sort(key=lambda v: _map_key(v, keys) if isinstance(v, dict) else _sort_key(v))
        return out
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        return {k: _ordered(v, props.get(k, extra)) for k, v in value.items()}
    return value


def _unordered(schema: dict[str, Any]) -> bool:
    """Whether a set or map list sits at or below `schema` (memoised by identity)."""
    key = id(schema)
    if key not in _UNORDERED:
        _UNORDERED[key] = False  # guards recursion; schemas are trees
        kids = [*(schema.get("properties") or {}).values(), schema.get("items"),
                schema.get("additionalProperties")]
        _UNORDERED[key] = schema.get("x-kubernetes-list-type") in ("set", "map") or any(
            isinstance(k, dict) and _unordered(k) for k in kids)
    return _UNORDERED[key]


def _sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _check_rule(rule: _Rule, data: dict[str, Any], path: FieldPath) -> Diagnostic | None:
    program = _program(rule.rule, rule.optional_old)
    if program.problem:
        return Diagnostic(Severity.WARNING, UNSUPPORTED_ID, "rule cannot be checked offline ("
                          f"{program.problem}); the cluster may still reject the value: "
                          f"{rule.rule.strip()}", path, subject=SUBJECT)
    outcome, failure = _run(program, data)
    if failure:
        return Diagnostic(Severity.ERROR, ERROR_ID, _runtime_error(failure, rule), path,
                          subject=SUBJECT)
    if outcome is True:
        return None
    if outcome is not False:
        return Diagnostic(Severity.ERROR, ERROR_ID, f"rule evaluated to {outcome!r}, expected "
                          f"a bool: {rule.rule.strip()}", path, subject=SUBJECT)
    message = _REASONS.get(rule.reason, "") + _failure_message(rule, data)
    return Diagnostic(Severity.ERROR, rule.rule_id, message, (*path, *rule.field_path),
                      subject=SUBJECT)


def _failure_message(rule: _Rule, data: dict[str, Any]) -> str:
    if rule.message_expression:
        program = _program(rule.message_expression, rule.optional_old)
        if not program.problem:
            text, failure = _run(program, data)
            if not failure and isinstance(text, str) and text.strip() and "\n" not in text:
                return text
    return rule.message or f"failed rule: {rule.rule.strip()}"


def _runtime_error(failure: str, rule: _Rule) -> str:
    """The API server's words for a rule whose evaluation failed."""
    shown = rule.message or rule.rule.strip()
    text = _STATUS_PREFIX.sub("", failure.strip())
    overload = _NO_OVERLOAD.match(text)
    if overload:
        return (f"'no such overload: {overload.group(1)}': call arguments did not match a "
                f"supported operator, function or macro signature for rule: {shown}")
    missing = _NO_SUCH_KEY.match(text)
    if missing:
        text = f"no such key: {missing.group(1)}"
    return f"{text[:1].lower()}{text[1:]} evaluating rule: {shown}"


# --- the CEL runtime (cel-expr-python, loaded on first use) -------------------------------------

def _runtime() -> tuple[Any, Any]:
    if not _RUNTIME:
        cel = importlib.import_module("cel_expr_python.cel")
        optional = importlib.import_module("cel_expr_python.ext.ext_optional")
        bindings = importlib.import_module("cel_expr_python.ext.ext_bindings")
        dyn = cel.Type.DYN
        env = cel.NewEnv(
            variables={"self": dyn, "oldSelf": dyn, "__old": dyn, "__hasOld": cel.Type.BOOL},
            extensions=[optional.ExtOptional(), bindings.ExtBindings()],
        )
        _RUNTIME.extend((cel, env, ProgramStore(_ENVIRONMENT, library_stamp(cel))))
    return _RUNTIME[0], _RUNTIME[1]


def _program(text: str, optional_old: bool) -> _Program:
    key = (text, optional_old)
    if key not in _PROGRAMS:
        _PROGRAMS[key] = _compile(text, optional_old)
    return _PROGRAMS[key]


def _compile(text: str, optional_old: bool) -> _Program:
    source = text
    if optional_old:
        source = ("cel.bind(oldSelf, __hasOld ? optional.of(__old) : optional.none(), "
                  f"({text}))")
    try:
        _, env = _runtime()
        store: ProgramStore = _RUNTIME[2]
        blob = store.get((text, optional_old))
        if blob is not None:
            try:
                return _Program(program=env.deserialize(blob))
            except Exception:  # an entry cel-cpp does not take: compile it again
                pass
        program = env.compile(source)
        with contextlib.suppress(Exception):  # not kept, then; the program is fine
            store.put((text, optional_old), program.serialize())
        return _Program(program=program)
    except ImportError:
        return _Program(problem="the CEL runtime cel-expr-python is not installed")
    except Exception as exc:  # any compile error is reported
        return _Program(problem=_compile_problem(str(exc)))


def _compile_problem(text: str) -> str:
    for line in text.splitlines():
        line = _STATUS_PREFIX.sub("", line.strip())
        if line.startswith("ERROR: "):
            line = line[len("ERROR: "):]
        if line:
            return re.sub(r"^<input>:\d+:\d+: ", "", line)
    return "compile error"


def _run(program: _Program, data: dict[str, Any]) -> tuple[Any, str]:
    """The result of a compiled program on `data`, or the text of its runtime error; results on
    scalar values are memoised (a rule is a pure function of its variables)."""
    key: tuple[Any, ...] | None = None
    if all(isinstance(v, _SCALARS) for v in data.values()):
        key = (id(program), *((n, type(v), v) for n, v in data.items()))
        if key in _MEMO:
            return _MEMO[key]
    result = _evaluate(program, data)
    if key is not None:
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.clear()
        _MEMO[key] = result
    return result


def _evaluate(program: _Program, data: dict[str, Any]) -> tuple[Any, str]:
    try:
        cel, _ = _runtime()
        result = program.program.eval(data=data)
        if result.type() == cel.Type.ERROR:
            return None, str(result.value()) or "evaluation error"
        return result.value(), ""
    except Exception as exc:  # conversion or runtime failure
        return None, str(exc) or type(exc).__name__
