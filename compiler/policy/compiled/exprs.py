"""Compiling CUE syntax (as the bridge's official parser gives it) into Python closures.

Each expression becomes a function of an environment (`Env`: comprehension variables and lets
by a key made at compile time, and each enclosing struct literal's instance by the literal's
key); names are resolved here, lexically, as CUE resolves them (an identifier label is
referable, a quoted one is not; a let, a `for` variable, an import, then the predeclared
names). Every field declaration is a unit: the compiler records which units each unit reads
or contains (`deps`) and why a unit is not compiled (`broken`), so that `plan` can tell which
rules compile whole. A construct outside the subset (`NotCompiled`) breaks only its unit.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from compiler.policy.compiled import builtins as bi
from compiler.policy.compiled import ops
from compiler.policy.compiled.lists import Lists
from compiler.policy.compiled.values import (
    TOP,
    TYPES,
    Bottom,
    Env,
    Literal,
    Struct,
    Unsure,
    unify,
)

Fn = Callable[[Env], Any]
Node = dict[str, Any]
Unit = tuple[int, str]
FILE = 1  # the key of the file's own literal (the first one compiled)
_SCALARS = (str, int, bool, type(None))
_CACHED = 1024  # helper structs kept per site


_UNSUPPORTED = {  # what the parser's node types not compiled are, in words
    "*ast.BasicLit": "a float, bytes or multi-line literal",
    "*ast.Interpolation": "a multi-line or bytes interpolation",
    "*ast.SliceExpr": "a slice expression",
    "*ast.Ellipsis": "an open list",
    "*ast.Alias": "an alias",
    "*ast.SelectorExpr": "a selector of a quoted hidden label",
    "*ast.Field": "a field with a pattern, alias or dynamic label",
    "*ast.Func": "a function type",
}


class NotCompiled(Exception):
    """A construct the compiler does not cover (the message says which, and where)."""


def _not(node: Node, what: str) -> NotCompiled:
    return NotCompiled(f"{what} at line {node.get('line', 0)}")


class Scope:
    """Names visible at one point: name -> binding, then the enclosing scope's."""

    __slots__ = ("names", "parent")

    def __init__(self, names: dict[str, tuple[Any, ...]], parent: Scope | None) -> None:
        self.names, self.parent = names, parent

    def lookup(self, name: str) -> tuple[Any, ...] | None:
        scope: Scope | None = self
        while scope is not None:
            found = scope.names.get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None


class Compiler(Lists):
    """Compiles one file's literals and expressions, recording units and their deps."""

    def __init__(self, special: set[str]) -> None:
        self.special = special  # file-level fields the engine fills ("input", "settings")
        self.keys = itertools.count(1)
        self.units: list[Unit] = []
        self.deps: dict[Unit, set[Unit]] = {}
        self.broken: dict[Unit, str] = {}
        self.literals: dict[int, Literal] = {}
        self._stack: list[Unit] = []
        self.node_keys: dict[int, int] = {}  # id of a struct node -> its literal's key
        self.referenced: set[int] = set()  # literals whose own fields are referred to
        self.scopes: dict[int, Scope] = {}  # each literal's scope (its fields' names)
        self.static: set[str] = set()  # file-level fields that do not read input (`plan`)
        # inside the operand of a presence test or a default: an error there is a value, so
        # what CUE evaluates lazily stays lazy
        self.lazy = 0
        self.captures = 0  # constructs compiled that keep their environment for later

    # --- struct literals -------------------------------------------------------------
    def literal(self, node: Node, parent: Scope | None) -> Literal:
        """A struct literal (or the file): its fields compiled, each as a unit."""
        lit = Literal(next(self.keys))
        self.literals[lit.key] = lit
        self.node_keys[id(node)] = lit.key
        elts = node.get("elts") if node["t"] == "Struct" else node.get("decls")
        names: dict[str, tuple[Any, ...]] = {}
        for elt in elts or []:
            self._declare(elt, lit, names)
        scope = self.scopes[lit.key] = Scope(names, parent)
        for elt in elts or []:
            if elt["t"] == "Field" and not lit.impure:
                self._field(elt, lit, scope)
            elif elt["t"] == "Let":
                self._unit((lit.key, "\0" + elt["name"]),
                           lambda elt=elt: self._let(elt, lit, scope))  # type: ignore[misc]
        return lit

    def _declare(self, elt: Node, lit: Literal, names: dict[str, tuple[Any, ...]]) -> None:
        t = elt["t"]
        if t == "Field":
            if elt["constraint"]:
                lit.impure = True  # an optional or required field: a constraint
            elif elt["ident"]:
                names[elt["label"]] = ("field", lit.key, elt["label"])
            if not elt["label"].startswith(("_", "#")) and elt["label"] not in lit.regular:
                lit.regular.append(elt["label"])
        elif t == "Let":
            names[elt["name"]] = ("slet", lit.key, elt["name"])
        elif t == "Imports":
            for spec in elt["specs"]:
                self._import(spec, names)
        elif t != "Package":
            lit.impure = True  # an embedding, a comprehension, a pattern: not read

    def _import(self, spec: Node, names: dict[str, tuple[Any, ...]]) -> None:
        if spec["t"] != "Import":
            return
        path = spec["path"]
        name = spec.get("name") or path.rsplit("/", 1)[-1]
        names[name] = ("import", path)

    def _field(self, elt: Node, lit: Literal, scope: Scope) -> None:
        label = elt["label"]
        fns = lit.fields.setdefault(label, [])
        if lit.key == FILE and label in self.special:
            return  # filled by the engine (the pack's own declaration is checked by `plan`)
        fns.append(self._unit((lit.key, label), lambda: self.expr(elt["value"], scope)))

    def _let(self, elt: Node, lit: Literal, scope: Scope) -> Fn:
        fn = self.expr(elt["expr"], scope)
        lit.lets[elt["name"]] = fn
        return fn

    def _unit(self, unit: Unit, build: Callable[[], Fn]) -> Fn:
        """Compile one unit, recording what it reads; a unit outside the subset raises
        `Unsure` when evaluated (and `broken` says why)."""
        if unit not in self.deps:
            self.units.append(unit)
            self.deps[unit] = set()
        stack = self._stack
        if stack:
            self.deps[stack[-1]].add(unit)  # contained
        stack.append(unit)
        try:
            return build()
        except NotCompiled as exc:
            self.broken.setdefault(unit, str(exc))
            return _unsure
        finally:
            stack.pop()

    def _read(self, unit: Unit) -> None:
        if self._stack:
            self.deps[self._stack[-1]].add(unit)

    # --- expressions -----------------------------------------------------------------
    def expr(self, node: Node | None, scope: Scope) -> Fn:
        """One expression as a function of the environment."""
        if node is None:
            raise NotCompiled("a missing expression")
        method = getattr(self, "_" + node["t"].lower(), None)
        if method is None:
            raise _not(node, _UNSUPPORTED.get(node.get("go", ""), f"the syntax {node['t']}"))
        fn: Fn = method(node, scope)
        return fn

    def _lit(self, node: Node, scope: Scope) -> Fn:
        value = None if node["kind"] == "null" else \
            int(node["value"]) if node["kind"] == "int" else node["value"]
        return lambda env: value

    def _paren(self, node: Node, scope: Scope) -> Fn:
        return self.expr(node["x"], scope)

    def _bottom(self, node: Node, scope: Scope) -> Fn:
        def bottom(env: Env) -> Any:
            raise Bottom
        return bottom

    def _ident(self, node: Node, scope: Scope) -> Fn:
        name = node["name"]
        found = scope.lookup(name)
        if found is None:
            if name == "_":
                return lambda env: TOP
            if name in TYPES:
                t = TYPES[name]
                return lambda env: t
            raise _not(node, f"the name {name}")
        kind = found[0]
        if kind == "var":
            key = found[1]
            return lambda env: env[key]
        if kind == "let":
            key = found[1]
            return lambda env: env[key].get()
        if kind == "field":
            key, label = found[1], found[2]
            self._read((key, label))
            self.referenced.add(key)
            return lambda env: env[key].field(label)
        if kind == "slet":
            key, label = found[1], found[2]
            self._read((key, "\0" + label))
            self.referenced.add(key)
            return lambda env: env[key].let(key, label)
        raise _not(node, f"the package {name} used as a value")

    def _chain(self, node: Node, scope: Scope) -> tuple[Fn, tuple[str, ...]] | None:
        """`x.a["b"].c` as (x, labels) when every step is a label (None otherwise)."""
        labels: list[str] = []
        while True:
            if node["t"] == "Select":
                labels.append(node["sel"])
            elif node["t"] == "Index" and node["index"]["t"] == "Lit" and \
                    node["index"]["kind"] == "string":
                labels.append(node["index"]["value"])
            else:
                break
            node = node["x"]
        if not labels:
            return None
        return self.expr(node, scope), tuple(reversed(labels))

    def _select(self, node: Node, scope: Scope) -> Fn:
        chain = self._chain(node, scope)
        assert chain is not None
        root, labels = chain
        if len(labels) == 1:
            label = labels[0]
            return lambda env: ops.select(root(env), label)
        return lambda env: ops.walk(root(env), labels)

    def _index(self, node: Node, scope: Scope) -> Fn:
        if node["index"]["t"] == "Lit" and node["index"]["kind"] == "string":
            return self._select(node, scope)
        if node["x"]["t"] == "List" and node["index"]["t"] == "Lit" and \
                node["index"]["kind"] == "int":
            return self.indexed(node["x"], int(node["index"]["value"]), scope)
        x, index = self.expr(node["x"], scope), self.expr(node["index"], scope)
        return lambda env: ops.index(x(env), index(env))

    def _call(self, node: Node, scope: Scope) -> Fn:
        fn = self._builtin(node["fun"], scope)
        whole = fn is not bi.PREDECLARED["len"]  # len counts elements that may be errors
        args = [self.eager(a, scope) if whole else self.expr(a, scope) for a in node["args"]]
        if len(args) == 1:
            (one,) = args
            return lambda env: fn(one(env))
        if len(args) == 2:
            first, second = args
            return lambda env: fn(first(env), second(env))
        return lambda env: fn(*[a(env) for a in args])

    def _builtin(self, fun: Node, scope: Scope) -> bi.Builtin:
        found = self.builtin_of(fun, scope)
        if found is None:
            raise _not(fun, "a call of a function outside the compiled builtins")
        return found

    def builtin_of(self, fun: Node, scope: Scope) -> bi.Builtin | None:
        """The builtin a call's function names (None: not one the plans have)."""
        if fun["t"] == "Ident" and scope.lookup(fun["name"]) is None and \
                fun["name"] in bi.PREDECLARED:
            return bi.PREDECLARED[fun["name"]]
        if fun["t"] == "Select" and fun["x"]["t"] == "Ident":
            found = scope.lookup(fun["x"]["name"])
            if found is not None and found[0] == "import":
                return bi.PACKAGES.get(found[1], {}).get(fun["sel"])
        return None

    def _unary(self, node: Node, scope: Scope) -> Fn:
        op, x = node["op"], self.expr(node["x"], scope)
        if op == "!":
            return lambda env: ops.negate(x(env))
        if op == "-":
            return lambda env: ops.minus(x(env))
        raise _not(node, f"the operator {op}")

    def _binary(self, node: Node, scope: Scope) -> Fn:
        op = node["op"]
        if op == "|":
            return self._default(node, scope)
        if op in ("==", "!=") and "Bottom" in (node["x"]["t"], node["y"]["t"]):
            return self._presence(node, scope, op == "!=")
        if op == "&":
            filled = self._filled(node, scope)
            if filled is not None:
                return filled
        fn = ops.BINARY.get(op)
        if fn is None:
            raise _not(node, f"the operator {op}")
        x, y = self.expr(node["x"], scope), self.expr(node["y"], scope)
        return lambda env: fn(x(env), y(env))

    def _filled(self, node: Node, scope: Scope) -> Fn | None:
        """`helper & {field: value, ...}` with a file-level helper struct. Outside presence
        tests and defaults the values are evaluated at once (an error hands the rule to CUE)
        and the unified struct, a function of them, is kept for values met before (when the
        helper does not read the input: `static`, filled in by the plan)."""
        left, right = node["x"], node["y"]
        found = scope.lookup(left["name"]) if left["t"] == "Ident" else None
        if found is None or found[:2] != ("field", FILE) or right["t"] != "Struct" or \
                self.record(right, scope) is None:
            return None
        label = found[2]
        self._read((FILE, label))
        lit = self.literals[self.node_keys[id(right)]]
        if self.lazy:
            self.captures += 1
            return lambda env: unify(env[FILE].field(label), Struct([(lit, env)]))
        labels, fns = list(lit.fields), [fns[0] for fns in lit.fields.values()]
        cache: dict[tuple[Any, ...], Any] = {}
        static = self.static

        def unified(env: Env) -> Any:
            base, values = env[FILE].field(label), [fn(env) for fn in fns]
            if not isinstance(base, Struct):
                return unify(base, Struct([(lit, env)]))
            key = tuple((type(v), v) for v in values)
            if label not in static or not all(t in _SCALARS for t, _ in key):
                return env[FILE].owns(base.given(lit, labels, values))
            hit = cache.get(key)
            if hit is None:
                hit = base.given(lit, labels, values)
                if len(cache) >= _CACHED:  # (full: kept as it is; emptying it and filling
                    return env[FILE].owns(hit)  # it again left the memory fragmented)
                cache[key] = hit
            return hit
        return unified

    def _default(self, node: Node, scope: Scope) -> Fn:
        """`*x | y`: x when it is not an error, else y (the only disjunction compiled)."""
        first = node["x"]
        nested = any(n.get("t") == "Binary" and n.get("op") == "|"
                     for n in (node["y"], first.get("x", {})))
        if first["t"] != "Unary" or first["op"] != "*" or nested:
            raise _not(node, "a disjunction other than *default | other")
        self.lazy += 1
        try:
            chain = self._chain(first["x"], scope) if first["x"]["t"] in ("Select", "Index") \
                else None
            x = self.expr(first["x"], scope) if chain is None else None
        finally:
            self.lazy -= 1
        y = self.expr(node["y"], scope)
        if chain is not None:
            root, labels = chain

            def default_chain(env: Env) -> Any:
                try:
                    value = ops.reach(root(env), labels)
                except Bottom:
                    value = ops.MISSING
                return ops.tentative(y(env)) if value is ops.MISSING else value
            return default_chain
        assert x is not None

        def default(env: Env) -> Any:
            try:
                return ops.settled(x(env))
            except Bottom:
                return ops.tentative(y(env))
        return default

    def _presence(self, node: Node, scope: Scope, present: bool) -> Fn:
        self.lazy += 1
        try:
            return self._present(node, scope, present)
        finally:
            self.lazy -= 1

    def _present(self, node: Node, scope: Scope, present: bool) -> Fn:
        side = node["y"] if node["x"]["t"] == "Bottom" else node["x"]
        chain = self._chain(side, scope) if side["t"] in ("Select", "Index") else None
        if chain is not None:
            root, labels = chain

            def reaches(env: Env) -> bool:
                try:
                    value = root(env)
                except Bottom:
                    return not present
                return ops.present(value, labels) is present
            return reaches
        x = self.expr(side, scope)

        def test(env: Env) -> bool:
            try:
                ops.settled(x(env))
            except Bottom:
                return not present
            return present
        return test

    def record(self, node: Node, scope: Scope) -> Fn | None:
        """A struct literal of plain fields none of which refers to another, as data built
        at once (None for any other node)."""
        elts = node.get("elts") or []
        if node["t"] != "Struct" or not elts or any(
                e["t"] != "Field" or e["constraint"] or e["label"].startswith(("_", "#"))
                for e in elts) or len({e["label"] for e in elts}) != len(elts):
            return None
        lit = self.literal(node, scope)
        if lit.impure or lit.key in self.referenced:
            return None
        fields = [(label, fns[0]) for label, fns in lit.fields.items()]
        return lambda env: {label: fn(env) for label, fn in fields}

    def _interpolation(self, node: Node, scope: Scope) -> Fn:
        parts: list[str | Fn] = [p if isinstance(p, str) else self.expr(p, scope)
                                 for p in node["parts"]]
        return lambda env: ops.joined([p if p.__class__ is str else ops.text(p(env))  # type: ignore[operator]
                                       for p in parts])

    def _struct(self, node: Node, scope: Scope) -> Fn:
        lit = self.literal(node, scope)
        if lit.impure:
            raise _not(node, "a struct with an embedding, comprehension or constraint")
        self.captures += 1
        return lambda env: Struct([(lit, env)])


def _unsure(env: Env) -> Any:
    raise Unsure
