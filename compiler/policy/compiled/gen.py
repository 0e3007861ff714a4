"""A rule's `violations` comprehension as generated Python: the hot loop without closures.

The clauses become nested `for` and `if` statements over Python locals, label chains and
presence tests on a loop variable become calls on plain data, and each element is appended as
it is made. Whatever else the rule holds (helper structs, lazy lists, nested comprehensions)
is the closure `exprs.Compiler` makes for it, called with the environment, which the generated
code keeps in step with its locals (each binding is also written to `env` under its key). The
meaning is the closures' (the same `ops` functions); only the calls between them go. An error
raises `Bottom` or `Unsure` out of the function, which hands the rule to CUE, as before. The
test of a comprehension's first `if` that reads only the file's fields and the settings is
also made a function of its own (`guard_function`), which `plan` works out once per input for
every rule that opens with it, and runs no rule it closes.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from compiler.policy.compiled import builtins as bi
from compiler.policy.compiled import ops
from compiler.policy.compiled.exprs import FILE
from compiler.policy.compiled.values import INPUT, SETTINGS, Env, equal, spend

if TYPE_CHECKING:
    from compiler.policy.compiled.exprs import Compiler, Scope

Node = dict[str, Any]
_FILLED = {"input": "_input", "settings": "_settings"}  # the file's fields the engine fills
_ENGINE = (("_top", FILE), ("_input", INPUT), ("_settings", SETTINGS))  # in a rule's env
_BOOLEAN = ("_present(", "(not _present(", "_eq(", "(not _eq(", "_negate(", "_and(", "_or(",
            "(_is(", "(not (_is(", "((_q", "(not ((_q")  # generated code that gives a bool
# (or raises); `_q` names only `_equal`'s comparisons


def _values(value: Any) -> Any:
    """What `for v in value` ranges over (the values of `ops.pairs`)."""
    if value.__class__ is list:
        return value
    return [v for _, v in ops.pairs(value)]


def _cond(value: Any) -> bool:
    return ops.condition(value)


HELPERS: dict[str, Any] = {
    "_values": _values, "_pairs": ops.pairs, "_cond": _cond, "_eq": equal,
    "_sel": ops.select, "_walk": ops.walk, "_reach": ops.reach, "_present": ops.present,
    "_MISSING": ops.MISSING, "_tent": ops.tentative, "_text": ops.text,
    "_negate": ops.negate, "_minus": ops.minus, "_joined": ops.joined, "_spend": spend,
    "_and": ops.BINARY["&&"], "_or": ops.BINARY["||"], "_is": operator.is_,
    "_binop": ops.BINARY,
}


# What a guard may name: the file's struct, the settings, pure helpers, its own temporaries.
_GUARD_NAMES = frozenset({"_top", "field", "_settings", "__class__", "str", "int", "bool",
                          "_eq", "_cond", "_is", "_negate", "_and", "_or", "_present", "_sel",
                          "_walk", "_reach", "_MISSING", "_tent", "_text", "_joined",
                          "_binop", "_minus"})
_TEMP = re.compile(r"_[qt]\d+")


def guard_function(test: str) -> Callable[[Any, Any], Any] | None:
    """A rule's test as a function of the file's struct and the settings, when it reads
    nothing else (no loop variable, no closure called with the environment, not the input
    but through the file's fields): then it is the same for every rule that has it."""
    code = compile(f"def _guard(_top, _settings):\n return {test}", "<guard>", "exec")
    body = next(c for c in code.co_consts if hasattr(c, "co_names"))
    if not all(n in _GUARD_NAMES or _TEMP.fullmatch(n) for n in body.co_names):
        return None
    space: dict[str, Any] = dict(HELPERS)
    exec(code, space)
    fn: Callable[[Any, Any], Any] = space["_guard"]
    return fn


class Deferred:
    """A rule's written function, compiled from its text at the rule's first run: a rule
    that no input of the run opens (behind a false guard, as the pss rules below the level
    asked for) costs no `compile` at start-up."""

    __slots__ = ("constants", "name", "source")

    def __init__(self, source: str, name: str, constants: list[Any]) -> None:
        self.source, self.name, self.constants = source, name, constants

    def build(self) -> Callable[[Env], Any]:
        """The function (compiled anew at each call: the plan keeps what it returns)."""
        space: dict[str, Any] = {**HELPERS, "_k": self.constants}
        exec(compile(self.source, f"<rule {self.name}>", "exec"), space)
        fn: Callable[[Env], Any] = space["_rule"]
        return fn


class Generator:
    """Writes one rule's function; `constants` are what the code refers to as `_k[i]`."""

    def __init__(self, compiler: Compiler) -> None:
        self.compiler = compiler
        self.constants: list[Any] = []
        self.locals: dict[Any, str] = {}  # binding key -> Python local
        self.count = itertools.count()
        self.lines: list[str] = []
        self.guards: tuple[str, ...] | None = None

    def const(self, value: Any) -> str:
        self.constants.append(value)
        return f"_k[{len(self.constants) - 1}]"

    def opaque(self, node: Node, scope: Scope, eager: bool = False) -> str:
        """The node by its closure, called with the environment (a copy, when the closure
        keeps it for later: the generated code rebinds its loop variables in place)."""
        before = self.compiler.captures
        fn = self.compiler.eager(node, scope) if eager else self.compiler.expr(node, scope)
        env = "dict(env)" if self.compiler.captures != before else "env"
        return f"{self.const(fn)}({env})"

    def rule(self, node: Node, scope: Scope, name: str) -> Deferred:
        """The function of a rule whose `violations` is the list literal `node`. The
        engine's `input` and `settings` are in the environment (`INPUT`, `SETTINGS`), and
        the file's struct is `_top`, whose fields the code reads directly. When every
        element is a comprehension that opens with an `if`, `guards` holds their tests."""
        self.lines = []
        guards: list[str] | None = []
        for elt in node["elts"]:
            first = None
            if elt["t"] == "Comprehension":
                first = self.comprehension(elt, scope, 1)
            else:
                self.lines.append(f" append({self.element(elt, scope)})")
            guards = [*guards, first] if guards is not None and first is not None else None
        self.guards = tuple(guards) if guards else None
        head = ["def _rule(env):", " out = []", " append = out.append"]
        head += [f" {local} = env[{self.const(key)}]" for local, key in _ENGINE
                 if any(local in line for line in self.lines)]
        self.lines[:0] = head
        self.lines.append(" return out")
        return Deferred("\n".join(self.lines), name, self.constants)

    # --- statements ------------------------------------------------------------------
    def comprehension(self, node: Node, scope: Scope, depth: int) -> str | None:
        """Writes the comprehension's statements; returns the test of its first clause when
        that is an `if` (None otherwise): a guard, if `guard_function` makes one of it."""
        from compiler.policy.compiled.exprs import Scope as ScopeClass

        pad, guard = " " * depth, None
        for clause in node["clauses"]:
            t = clause["t"]
            if t == "If" and clause is node["clauses"][0]:
                # its temporaries numbered from 0, so that equal tests are equal texts (a
                # temporary is read only right after it is set: names may repeat)
                counter, self.count = self.count, itertools.count()
                guard = self._test(clause, scope)
                self.count = counter
                self.lines.append(f"{pad}if {guard}:")
            elif t == "If":
                self.lines.append(f"{pad}if {self._test(clause, scope)}:")
            elif t == "Let":
                key, var = object(), self.local()
                self.lines.append(f"{pad}{var} = {self.x(clause['expr'], scope)}")
                self.lines.append(f"{pad}env[{self.const(key)}] = {var}")
                self.locals[key] = var
                scope = ScopeClass({clause["name"]: ("var", key)}, scope)
                continue
            elif t == "For":
                scope = self._for(clause, scope, pad)
            else:
                raise ValueError(t)
            depth += 1
            pad = " " * depth
        value = node["value"]
        elts = value.get("elts") or []
        if value["t"] == "Struct" and len(elts) == 1 and elts[0]["t"] == "Embed":
            self.lines.append(f"{pad}append({self.element(elts[0]['expr'], scope)})")
        else:
            self.lines.append(f"{pad}append({self.element(value, scope)})")
        return guard

    def _test(self, clause: Node, scope: Scope) -> str:
        cond = self.x(clause["cond"], scope)
        return cond if cond.startswith(_BOOLEAN) else f"_cond({cond})"

    def _for(self, clause: Node, scope: Scope, pad: str) -> Scope:
        source = clause["source"]
        if source["t"] == "Struct" and clause.get("key") and \
                self.compiler.record(source, scope) is not None:
            # a struct written here: its fields in order, each evaluated as it is met
            src = "(" + "".join(f"({e['label']!r}, {self.x(e['value'], scope)}), "
                                for e in source["elts"]) + ")"
            return self._bind(clause, scope, pad, src, pairs=False)
        src = self.opaque(source, scope, eager=True) if source["t"] == "List" \
            else self.x(source, scope)
        return self._bind(clause, scope, pad, src, pairs=True)

    def _bind(self, clause: Node, scope: Scope, pad: str, src: str, pairs: bool) -> Scope:
        from compiler.policy.compiled.exprs import Scope as ScopeClass

        vkey, var = object(), self.local()
        names: dict[str, Any] = {clause["value"]["name"]: ("var", vkey)}
        self.locals[vkey] = var
        if clause.get("key"):
            kkey, kvar = object(), self.local()
            names[clause["key"]["name"]] = ("var", kkey)
            self.locals[kkey] = kvar
            ranged = f"_spend(env, list(_pairs({src})))" if pairs else src
            self.lines.append(f"{pad}for {kvar}, {var} in {ranged}:")
            self.lines.append(f"{pad} env[{self.const(kkey)}] = {kvar}")
        else:
            self.lines.append(f"{pad}for {var} in _spend(env, _values({src})):")
        self.lines.append(f"{pad} env[{self.const(vkey)}] = {var}")
        return ScopeClass(names, scope)

    def element(self, node: Node, scope: Scope) -> str:
        """An element of the list: a record as a dict display, else its value."""
        if self.compiler.record(node, scope) is not None:
            fields = ", ".join(f"{e['label']!r}: {self.element(e['value'], scope)}"
                               for e in node["elts"])
            return "{" + fields + "}"
        if node["t"] == "List":
            return self._argument(node, scope)
        return self.x(node, scope)

    def local(self) -> str:
        return f"v{next(self.count)}"

    # --- expressions -----------------------------------------------------------------
    def x(self, node: Node, scope: Scope) -> str:
        """The node as a Python expression (its closure where nothing better is known)."""
        method = getattr(self, "_" + node["t"].lower(), None)
        code = method(node, scope) if method is not None else None
        return code if code is not None else self.opaque(node, scope)

    def _lit(self, node: Node, scope: Scope) -> str:
        if node["kind"] == "null":
            return "None"
        return repr(int(node["value"]) if node["kind"] == "int" else node["value"])

    def _paren(self, node: Node, scope: Scope) -> str:
        return f"({self.x(node['x'], scope)})"

    def _ident(self, node: Node, scope: Scope) -> str | None:
        found = scope.lookup(node["name"])
        if found is not None and found[0] == "var" and found[1] in self.locals:
            return self.locals[found[1]]
        if found is not None and found[:2] == ("field", FILE):
            self.compiler.expr(node, scope)  # (records the read)
            return _FILLED.get(found[2]) or f"_top.field({found[2]!r})"
        return None

    def _chain(self, node: Node, scope: Scope) -> tuple[str, tuple[str, ...]] | None:
        """A label chain on a local (which cannot fail): its local and labels."""
        labels: list[str] = []
        while node["t"] in ("Select", "Index"):
            if node["t"] == "Select":
                labels.append(node["sel"])
            elif node["index"]["t"] == "Lit" and node["index"]["kind"] == "string":
                labels.append(node["index"]["value"])
            else:
                return None
            node = node["x"]
        root = self._ident(node, scope) if node["t"] == "Ident" else None
        return (root, tuple(reversed(labels))) if root is not None and labels else None

    def _select(self, node: Node, scope: Scope) -> str | None:
        chain = self._chain(node, scope)
        if chain is None:
            return None
        root, labels = chain
        if len(labels) == 1:
            return f"_sel({root}, {labels[0]!r})"
        return f"_walk({root}, {labels!r})"

    def _index(self, node: Node, scope: Scope) -> str | None:
        return self._select(node, scope)

    def _unary(self, node: Node, scope: Scope) -> str | None:
        if node["op"] == "!":
            return f"_negate({self.x(node['x'], scope)})"
        if node["op"] == "-":
            return f"_minus({self.x(node['x'], scope)})"
        return None

    def _binary(self, node: Node, scope: Scope) -> str | None:
        op, left, right = node["op"], node["x"], node["y"]
        if op in ("==", "!=") and "Bottom" in (left["t"], right["t"]):
            side = right if left["t"] == "Bottom" else left
            chain = self._chain(side, scope)
            if chain is None:
                return None
            code = f"_present({chain[0]}, {chain[1]!r})"
            return code if op == "!=" else f"(not {code})"
        if op == "|":
            return self._default(node, scope)
        if op in ("==", "!="):
            code = self._equal(left, right, scope)
            return code if op == "==" else f"(not {code})"
        fn = ops.BINARY.get(op)
        if fn is None or op == "&":
            return None
        name = {"&&": "_and", "||": "_or"}.get(op) or f"_binop[{op!r}]"
        return f"{name}({self.x(left, scope)}, {self.x(right, scope)})"

    def _equal(self, left: Node, right: Node, scope: Scope) -> str:
        """`x == y`; against a literal, the common case is decided inline."""
        if left["t"] == "Lit" and right["t"] != "Lit":
            left, right = right, left
        x, y = self.x(left, scope), self.x(right, scope)
        if right["t"] != "Lit":
            return f"_eq({x}, {y})"
        tmp, kind = f"_q{next(self.count)}", right["kind"]
        if kind == "null":
            return f"(_is({tmp} := {x}, None) or _eq({tmp}, None))"
        plain = {"string": "str", "int": "int", "bool": "bool"}[kind]
        return f"(({tmp} == {y}) if ({tmp} := {x}).__class__ is {plain} else _eq({tmp}, {y}))"

    def _default(self, node: Node, scope: Scope) -> str | None:
        first = node["x"]
        if first["t"] != "Unary" or first["op"] != "*" or node["y"].get("op") == "|":
            return None
        chain = self._chain(first["x"], scope)
        if chain is None:
            return None
        tmp = f"_t{next(self.count)}"
        other = self.x(node["y"], scope)
        if node["y"]["t"] == "Lit":  # (only a struct or list is tentative)
            return f"({tmp} if ({tmp} := _reach({chain[0]}, {chain[1]!r})) is not _MISSING " \
                f"else {other})"
        return f"({tmp} if ({tmp} := _reach({chain[0]}, {chain[1]!r})) is not _MISSING " \
            f"else _tent({other}))"

    def _call(self, node: Node, scope: Scope) -> str | None:
        fn = self.compiler.builtin_of(node["fun"], scope)
        if fn is None:
            return None
        whole = fn is not bi.PREDECLARED["len"]
        args = [self._argument(a, scope) if whole else self.x(a, scope) for a in node["args"]]
        return f"{self.const(fn)}({', '.join(args)})"

    def _argument(self, node: Node, scope: Scope) -> str:
        """A builtin's argument: used whole, so a list literal is built at once."""
        if node["t"] != "List":
            return self.x(node, scope)
        if any(e["t"] == "Comprehension" for e in node["elts"]):
            return self.opaque(node, scope, eager=True)
        return "[" + ", ".join(self.element(e, scope) for e in node["elts"]) + "]"

    def _interpolation(self, node: Node, scope: Scope) -> str:
        parts = [repr(p) if isinstance(p, str) else f"_text({self.x(p, scope)})"
                 for p in node["parts"]]
        return "_joined([" + ", ".join(parts) + "])"
