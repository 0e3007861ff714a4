"""A pack's compiled plan: which rules compile from their CUE source, and running them.

`PackPlan` compiles the pack file's syntax (from the official parser, via the bridge) once.
A rule is compiled when its one `violations` declaration and everything it reads (fields of
the file, helper structs such as an image reference parser, lets) are inside the subset
`exprs` covers, the file's `input` is left open (`input: _`), and the structs on the way to
the rule are plain literals; otherwise `reasons` says why and CUE evaluates it. Running a
compiled rule on an input gives its violations, or hands the rule to CUE for that input when
the plan meets what it does not model (`Unsure`) or what CUE reports as the rule's error
(`Bottom`). A rule whose every element opens with a guard (a first `if` that reads only the
file's fields and the settings: a level, a setting that turns the rule on) gives nothing for
an input where none of its guards holds, and is not run; a guard is worked out once per input
for every rule that has it. The plans are checked against CUE by `tjc policies test` and the
property tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from compiler.policy.compiled.exprs import FILE, Compiler, NotCompiled, Unit
from compiler.policy.compiled.gen import Deferred, Generator, guard_function
from compiler.policy.compiled.values import (
    INPUT,
    SETTINGS,
    STEPS,
    Bottom,
    Env,
    LazyList,
    Struct,
    Unsure,
    force,
    items_of,
    settings_data,
)

Found = list[tuple[tuple[Any, ...], str | None, str]]  # path, message, own severity ("")
Guard = Callable[[Any, Any], Any]  # a rule's guard, of the file's struct and the settings
SPECIAL = {"input": "input", "settings": "settings"}


class PackPlan:
    """The compiled rules of one pack file (`reasons`: why each other rule is not)."""

    def __init__(self, syntax: Any, rule_ids: Sequence[str], settings: Any) -> None:
        self.settings = settings_data(settings)
        self.reasons: dict[str, str] = {}
        self.compiled: frozenset[str] = frozenset()
        self.file: Any = None
        self.decided = self.handed = 0  # rule runs the plan decided, and handed to CUE
        self.guards: dict[str, tuple[Guard, ...]] = {}  # by rule: tests that open it
        self._grouped: dict[tuple[str, ...], list[tuple[tuple[Guard, ...] | None,
                                                       list[str]]]] = {}
        if not isinstance(syntax, dict) or syntax.get("t") != "File":
            self.reasons = {rid: "the pack's syntax is not available" for rid in rule_ids}
            return
        compiler = Compiler(set(SPECIAL))
        try:
            self.file = compiler.literal(syntax, None)
        except (NotCompiled, KeyError, TypeError) as exc:
            self.reasons = {rid: f"the file: {exc}" for rid in rule_ids}
            return
        self.entries: dict[str, Callable[[Env], Any] | Deferred | None] = {}
        made: dict[str, Guard | None] = {}  # one function per guard text
        for rid in rule_ids:
            reason = _reason(compiler, syntax, rid, self.file.impure)
            if reason:
                self.reasons[rid] = reason
                continue
            self.entries[rid], tests = _entry(compiler, syntax, rid)
            guards = [_made(made, test) for test in tests or ()]
            if guards and None not in guards:  # (each once: rules that share one, share it)
                self.guards[rid] = tuple(dict.fromkeys(g for g in guards if g is not None))
        self.compiled = frozenset(self.entries)
        labels = {label for key, label in compiler.deps if key == FILE and label[:1] != "\0"}
        self.static = _Static(Struct([(self.file, {})], {"settings": self.settings}),
                              frozenset(label for label in labels - set(SPECIAL)
                                        if not _reads_input(compiler, (FILE, label))))
        compiler.static.update(self.static.labels)

    def run(self, inp: dict[str, Any], rule_ids: Sequence[str]) -> dict[str, Found | None]:
        """Each compiled rule's violations of one input (None: CUE decides this rule)."""
        top = Struct([(self.file, {})], _TopData(self.static, inp, self.settings))
        out: dict[str, Found | None] = {}
        for guards, rids in self._gates(rule_ids):
            if guards is not None and not self._opens(guards, top):
                for rid in rids:
                    out[rid] = []  # (what the rule gives: every element behind a false guard)
                self.decided += len(rids)
                continue
            for rid in rids:
                out[rid] = self._run(rid, top, inp)
        top.release()
        return out

    def _gates(self, rule_ids: Sequence[str]) -> list[tuple[tuple[Guard, ...] | None, list[str]]]:
        """The rules by their guards (None: a rule without), each guard worked out once per
        input; the order between rules does not matter (each is a function of the input)."""
        key = tuple(rule_ids)
        found = self._grouped.get(key)
        if found is None:
            groups: dict[tuple[Guard, ...] | None, list[str]] = {}
            for rid in key:
                groups.setdefault(self.guards.get(rid), []).append(rid)
            found = self._grouped[key] = list(groups.items())
        return found

    def _run(self, rid: str, top: Struct, inp: dict[str, Any]) -> Found | None:
        entry = self.entries[rid]
        if isinstance(entry, Deferred):  # (its first run: compiled once, kept)
            entry = self.entries[rid] = entry.build()
        env = {FILE: top, STEPS: [0], INPUT: inp, SETTINGS: self.settings}
        try:
            value = entry(env) if entry is not None else \
                top.field("rules").field(rid).field("violations")
            found = _violations(value) if value else []
        except (Bottom, Unsure, RecursionError):
            self.handed += 1
            return None
        self.decided += 1
        return found

    def _opens(self, guards: tuple[Guard, ...], top: Struct) -> bool:
        """Whether one of a rule's guards holds for this input (the file's fields they read
        are kept in `top`). A guard that errs counts as holding: the rule then decides."""
        for guard in guards:
            try:
                if guard(top, self.settings):
                    return True
            except (Bottom, Unsure, RecursionError):
                return True
        return False


class _Static:
    """The file's fields that do not read `input`, evaluated once for every input."""

    __slots__ = ("labels", "top")

    def __init__(self, top: Struct, labels: frozenset[str]) -> None:
        self.top, self.labels = top, labels


class _TopData(dict[str, Any]):
    """The file's fields the engine gives: `input`, `settings` and the static fields."""

    __slots__ = ("static",)

    def __init__(self, static: _Static, inp: Any, settings: Any) -> None:
        super().__init__(input=inp, settings=settings)
        self.static = static

    def __contains__(self, label: object) -> bool:
        return dict.__contains__(self, label) or label in self.static.labels

    def __getitem__(self, label: str) -> Any:
        if dict.__contains__(self, label):
            return dict.__getitem__(self, label)
        return self.static.top.field(label)


def _entry(compiler: Compiler, syntax: dict[str, Any], rid: str
           ) -> tuple[Callable[[Env], Any] | Deferred | None, tuple[str, ...] | None]:
    """The rule's `violations`, built at once in the file's environment (None when it
    reads fields of the rule's own struct: then it is read through the structs), and its
    generated function's guards (`Generator.rule`)."""
    for rules in (d["value"] for d in syntax["decls"] if _field(d, "rules")):
        for body in (d["value"] for d in rules["elts"] if _field(d, rid)):
            found = [d for d in body["elts"] if _field(d, "violations")]
            if not found:
                continue
            keys = {compiler.node_keys[id(rules)], compiler.node_keys[id(body)]}
            unit = (compiler.node_keys[id(body)], "violations")
            if any(k in keys for k, _ in _reach(compiler, unit) - {unit}):
                return None, None
            node, scope = found[0]["value"], compiler.scopes[unit[0]]
            if node["t"] == "List":
                gen = Generator(compiler)
                return gen.rule(node, scope, rid), gen.guards
            return compiler.eager(node, scope), None
    return None, None


def _made(made: dict[str, Guard | None], test: str) -> Guard | None:
    """The guard of a test (None when it is none), made once per text (equal texts are
    equal tests: a guard names nothing but the file's struct, the settings and helpers)."""
    if test not in made:
        made[test] = guard_function(test)
    return made[test]


def _reach(compiler: Compiler, start: Unit) -> set[Unit]:
    """Every unit a unit reads or contains, itself included."""
    seen, todo = {start}, [start]
    while todo:
        for dep in compiler.deps.get(todo.pop(), set()) - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


def _reads_input(compiler: Compiler, unit: Unit) -> bool:
    return (FILE, "input") in _reach(compiler, unit)


def _violations(value: Any) -> Found:
    """The violations as the engine reads CUE's: each element's path and message."""
    found: Found = []
    if not value:  # (an empty list, data or lazy)
        return found
    for item in items_of(value):
        if not isinstance(item, (Struct, dict)):
            raise Unsure  # the contract refuses it: CUE reports the rule's error
        data = force(item)
        path, message = data.get("path"), data.get("message")
        severity = data.get("severity", "")
        if not isinstance(path, list) or \
                any(isinstance(p, bool) or not isinstance(p, (str, int)) for p in path) or \
                (message is not None and not isinstance(message, str)) or \
                ("message" in data and message is None) or \
                severity not in ("", "deny", "warn") or ("severity" in data and not severity):
            raise Unsure
        found.append((tuple(path), message, severity))
    return found


def _reason(compiler: Compiler, syntax: dict[str, Any], rid: str, impure: bool) -> str:
    """Why a rule is not compiled ("" when it is)."""
    if impure:
        return "the file embeds, generates or constrains fields"
    if not _open_input(syntax):
        return "the file constrains input"
    rules = [d["value"] for d in syntax["decls"] if _field(d, "rules")]
    if any(r["t"] != "Struct" for r in rules):
        return "rules is not written as plain structs"
    bodies = [d["value"] for r in rules for d in r["elts"] if _field(d, rid)]
    if not bodies or any(b["t"] != "Struct" for b in bodies):
        return "the rule is not written as a plain struct"
    units = [(compiler.node_keys[id(b)], "violations") for b in bodies
             if any(_field(d, "violations") for d in b["elts"])]
    keys = [compiler.node_keys.get(id(n)) for n in rules + bodies]
    if any(k is None or compiler.literals[k].impure for k in keys):
        return "the rule's struct embeds, generates or constrains fields"
    if len(units) != 1:
        return "violations is declared more than once" if units else "no violations"
    return _closure(compiler, units[0])


def _closure(compiler: Compiler, start: Unit) -> str:
    """The first reason a unit the rule reads or contains is not compiled ("" if none);
    units in order, so that the reason given is always the same one."""
    for unit in sorted(_reach(compiler, start)):
        if unit in compiler.broken:
            return compiler.broken[unit]
        if unit not in compiler.deps and not (unit[0] == FILE and unit[1] in SPECIAL):
            return f"it reads {unit[1].strip(chr(0))}, declared in a struct the compiler " \
                "does not read"
    return ""


def _field(decl: dict[str, Any], label: str) -> bool:
    return decl.get("t") == "Field" and decl.get("label") == label and not decl["constraint"]


def _open_input(syntax: dict[str, Any]) -> bool:
    """Whether the file leaves `input` open (`input: _`): the engine's data is then the
    whole of it."""
    return all(d["value"].get("t") == "Ident" and d["value"].get("name") == "_"
               for d in syntax["decls"] if _field(d, "input"))


__all__ = ["Found", "LazyList", "PackPlan"]
