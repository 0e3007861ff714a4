"""Compiling list literals and comprehensions (`for`, `if` and `let` clauses).

A list is lazy where CUE's laziness can show (a list indexed or selected from: an element not
asked for may be an error), and built eagerly where every element is evaluated anyway and any
error is the whole result's (a builtin's argument, a `for` source, the rule's `violations`):
then no element keeps its environment. A comprehension compiles to a chain of steps, each
calling the next with the environment its clause makes (no intermediate lists). A struct
literal whose fields do not refer to each other, in an eager list, is built as plain data.
A `let` clause is evaluated when met, unless it is inside a presence test or a default (where
an error is a value): an error it raises hands the rule to CUE, so evaluating early can only
make the plan ask CUE more often, never give another answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from compiler.policy.compiled import ops
from compiler.policy.compiled.values import Env, LazyList, spend

if TYPE_CHECKING:
    from compiler.policy.compiled.exprs import Scope

Fn = Callable[[Env], Any]
Node = dict[str, Any]
Step = Callable[[Env, list[Any]], None]


class Lists:
    """The list part of `exprs.Compiler` (a mixin: it calls the compiler's `expr`)."""

    def expr(self, node: Node | None, scope: Scope) -> Fn:
        """One expression (`exprs.Compiler.expr`)."""
        raise NotImplementedError

    def record(self, node: Node, scope: Scope) -> Fn | None:
        """A struct literal built as data, or None (`exprs.Compiler.record`)."""
        raise NotImplementedError

    lazy: int  # (`exprs.Compiler.lazy`)
    captures: int  # (`exprs.Compiler.captures`)

    def _list(self, node: Node, scope: Scope) -> Fn:
        """A list literal, lazy; `[a, b, ...][k]` is compiled by `indexed`."""
        self.captures += 1
        parts = [self._comprehension(e, scope, False) if e["t"] == "Comprehension"
                 else _append_later(self.expr(e, scope)) for e in node["elts"]]

        def make(env: Env) -> LazyList:
            items: list[Any] = []
            for part in parts:
                part(env, items)
            return LazyList(items)
        return make

    def eager(self, node: Node, scope: Scope) -> Fn:
        """An expression whose value is used whole: a list literal is built at once."""
        if node["t"] != "List":
            return self.expr(node, scope)
        parts = [self._comprehension(e, scope, True) if e["t"] == "Comprehension"
                 else _append_now(self._element_eager(e, scope)) for e in node["elts"]]
        if len(parts) == 1:
            (only,) = parts

            def make_one(env: Env) -> list[Any]:
                items: list[Any] = []
                only(env, items)
                return items
            return make_one

        def make(env: Env) -> list[Any]:
            items: list[Any] = []
            for part in parts:
                part(env, items)
            return items
        return make

    def indexed(self, node: Node, index: int, scope: Scope) -> Fn:
        """`[...][k]` for a constant k: the elements up to k are counted, only the k-th is
        evaluated (the others may be errors CUE never meets)."""
        lazy = self._list(node, scope)

        def pick(env: Env) -> Any:
            return ops.index(lazy(env), index)
        return pick

    def _element_eager(self, node: Node, scope: Scope) -> Fn:
        record = self.record(node, scope)
        return record if record is not None else self.eager(node, scope)

    def _comprehension(self, node: Node, scope: Scope, eager: bool) -> Step:
        """A comprehension as a chain of steps ending in appending its value (evaluated now
        when `eager`, else with its environment for later)."""
        made: list[tuple[str, Any, Any]] = []
        marks: list[int] = []
        for clause in node["clauses"]:
            part, names = self._clause(clause, scope)
            made.append(part)
            marks.append(self.captures)
            scope = _scope(scope, names)
        value = self._value(node["value"], scope, eager)
        step: Step = _append_now(value) if eager else _append_later(value)
        in_place = False
        for (kind, fn, keys), mark in zip(reversed(made), reversed(marks), strict=True):
            if kind in ("for", "set") and self.captures == mark and eager:
                kind += "!"  # nothing after it keeps the environment: bind in place
                in_place = True
            step = _STEPS[kind](fn, keys, step)
        return _fresh(step) if in_place else step

    def _value(self, node: Node, scope: Scope, eager: bool) -> Fn:
        """A comprehension's value: `{x}` (one embedded expression) gives x itself."""
        elts = node.get("elts") or []
        if node["t"] == "Struct" and len(elts) == 1 and elts[0]["t"] == "Embed":
            inner = elts[0]["expr"]
            return self._element_eager(inner, scope) if eager else self.expr(inner, scope)
        if node["t"] == "Struct" and any(e["t"] == "Embed" for e in elts):
            from compiler.policy.compiled.exprs import NotCompiled
            raise NotCompiled(f"a comprehension value with fields and an embedding at line "
                              f"{node.get('line', 0)}")
        return self._element_eager(node, scope) if eager else self.expr(node, scope)

    def _clause(self, clause: Node,
                scope: Scope) -> tuple[tuple[str, Any, Any], dict[str, Any]]:
        t = clause["t"]
        if t == "If":
            return ("if", self.expr(clause["cond"], scope), None), {}
        if t == "Let":
            key = object()
            if not self.lazy:  # an error is the rule's (CUE is asked): evaluate it now
                return ("set", self.expr(clause["expr"], scope), key), \
                    {clause["name"]: ("var", key)}
            self.captures += 1
            return ("let", self.expr(clause["expr"], scope), key), \
                {clause["name"]: ("let", key)}
        if t == "For":
            kname = clause["key"]["name"] if clause.get("key") else None
            keys = (object() if kname else None, object())
            names = {clause["value"]["name"]: ("var", keys[1])}
            if kname:
                names[kname] = ("var", keys[0])
            return ("for", self.eager(clause["source"], scope), keys), names
        from compiler.policy.compiled.exprs import NotCompiled
        raise NotCompiled(f"the clause {t} at line {clause.get('line', 0)}")


def _scope(parent: Scope, names: dict[str, Any]) -> Scope:
    from compiler.policy.compiled.exprs import Scope
    return Scope(names, parent) if names else parent


def _append_now(value: Fn) -> Step:
    def append(env: Env, out: list[Any]) -> None:
        out.append(value(env))
    return append


def _append_later(value: Fn) -> Step:
    def append(env: Env, out: list[Any]) -> None:
        out.append((value, env))
    return append


def _if(cond: Fn, _: Any, nxt: Step) -> Step:
    def step(env: Env, out: list[Any]) -> None:
        if ops.condition(cond(env)):
            nxt(env, out)
    return step


def _let(fn: Fn, key: Any, nxt: Step) -> Step:
    def step(env: Env, out: list[Any]) -> None:
        inner = dict(env)
        inner[key] = ops.Thunk(fn, env)
        nxt(inner, out)
    return step


def _set(fn: Fn, key: Any, nxt: Step) -> Step:
    def step(env: Env, out: list[Any]) -> None:
        inner = dict(env)
        inner[key] = fn(env)
        nxt(inner, out)
    return step


def _fresh(nxt: Step) -> Step:
    """The chain run on a copy of the environment (which steps that bind in place write)."""
    def step(env: Env, out: list[Any]) -> None:
        nxt(dict(env), out)
    return step


def _set_here(fn: Fn, key: Any, nxt: Step) -> Step:
    def step(env: Env, out: list[Any]) -> None:
        env[key] = fn(env)
        nxt(env, out)
    return step


def _for_here(source: Fn, keys: tuple[Any, Any], nxt: Step) -> Step:
    kkey, vkey = keys

    def step(env: Env, out: list[Any]) -> None:
        values = source(env)
        if kkey is None and values.__class__ is list:
            spend(env, values)
            for v in values:
                env[vkey] = v
                nxt(env, out)
            return
        for k, v in spend(env, list(ops.pairs(values))):
            env[vkey] = v
            if kkey is not None:
                env[kkey] = k
            nxt(env, out)
    return step


def _for(source: Fn, keys: tuple[Any, Any], nxt: Step) -> Step:
    kkey, vkey = keys

    def step(env: Env, out: list[Any]) -> None:
        for k, v in spend(env, list(ops.pairs(source(env)))):
            inner = dict(env)
            inner[vkey] = v
            if kkey is not None:
                inner[kkey] = k
            nxt(inner, out)
    return step


_STEPS: dict[str, Callable[[Any, Any, Step], Step]] = {
    "if": _if, "let": _let, "set": _set, "for": _for, "set!": _set_here, "for!": _for_here}
