"""The values a compiled policy plan computes with, and what CUE's operators do to them.

Data (the policy input and the settings) stays plain JSON data; what a pack's own literals
make is lazy, as in CUE: a `Struct` evaluates a field when it is selected, merging every
conjunct that declares it, and a `LazyList` evaluates an element when it is indexed or the
list is used whole (`[if c {x}, "default"][0]` never evaluates the second element when the
first is there). Evaluation ends in one of two exceptions: `Bottom` where CUE's result is an
error (an undefined field, a conflict, a type mismatch), which presence tests (`x != _|_`) and
defaults (`*x | y`) turn into a value as CUE does; and `Unsure` where the plan cannot say what
CUE would give, which hands the input to CUE for that rule.

Pure functions and small classes; the only module that knows the value model (`exprs` builds
on it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sized
from typing import Any, TypeVar

Env = dict[Any, Any]
SizedT = TypeVar("SizedT", bound=Sized)


# What one rule run may make before CUE is asked instead (its evaluator runs bounded in memory
# and time, TJC_CUE_MEMORY and TJC_CUE_TIMEOUT; the plans run in tjc's own process): the
# characters of one string or elements of one list, and the iterations of its `for` clauses.
MAX_SIZE = 1 << 20
MAX_STEPS = 1 << 18
STEPS = object()  # the environment's key of the run's iteration count (a one-item list)
INPUT, SETTINGS = object(), object()  # where a generated rule finds the engine's data


def sized(value: SizedT) -> SizedT:
    """A string or list the plans made, as long as it stays within `MAX_SIZE`."""
    if len(value) > MAX_SIZE:
        raise Unsure
    return value


def spend(env: Env, values: Any) -> Any:
    """`values`, a `for` clause's range, counted against the run's `MAX_STEPS`."""
    count = env.get(STEPS)
    if count is not None:
        count[0] += len(values)
        if count[0] > MAX_STEPS:
            raise Unsure
    return values


class Bottom(Exception):
    """CUE's result is an error here (caught by presence tests and defaults)."""


class Unsure(Exception):
    """The plan cannot decide this as CUE does: CUE evaluates the rule for this input."""


class Type:
    """A non-concrete basic type (`string`, `int`, `_` ...): a constraint, never output."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def admits(self, value: Any) -> bool:
        """Whether a concrete value unifies with the type."""
        kind = kind_of(value)
        return self.kind in ("top", kind) or (self.kind == "number" and kind in ("int", "float"))


TYPES = {name: Type(name) for name in ("string", "int", "float", "number", "bool", "bytes")}
TOP = Type("top")


class Settings(dict[str, Any]):
    """The pack's resolved settings: a missing field may be one CUE holds non-concrete,
    so the plan does not decide it; fields iterate in the order CUE gave them."""


def settings_data(value: Any) -> Any:
    """Resolved settings (JSON from CUE) with every struct a `Settings`."""
    if isinstance(value, dict):
        return Settings({k: settings_data(v) for k, v in value.items()})
    if isinstance(value, list):
        return [settings_data(v) for v in value]
    return value


def kind_of(value: Any) -> str:
    """CUE's kind of a value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, LazyList)):
        return "list"
    if isinstance(value, (dict, Struct)):
        return "struct"
    if isinstance(value, Type):
        raise Unsure  # not concrete: what CUE does with it depends on where it is used
    raise Unsure


class Literal:
    """A struct literal as compiled: its fields (label -> value expressions), the lets it
    declares, the regular labels in order, and whether it holds anything the plans do not
    read (an embedding, a comprehension, a pattern or optional field: `impure`)."""

    __slots__ = ("fields", "impure", "key", "lets", "regular")

    def __init__(self, key: int) -> None:
        self.key = key
        self.fields: dict[str, list[Callable[[Env], Any]]] = {}
        self.lets: dict[str, Callable[[Env], Any]] = {}
        self.regular: list[str] = []
        self.impure = False


_BUSY = object()


class Struct:
    """A struct made of literals (each with the environment it was written in), evaluated
    field by field; `data` overrides fields (the file's `input` and `settings`)."""

    __slots__ = ("conjuncts", "data", "inner", "memo", "owned", "tentative")

    def __init__(self, conjuncts: list[tuple[Literal, Env]],
                 data: dict[str, Any] | None = None, tentative: bool = False) -> None:
        self.conjuncts = conjuncts
        self.memo: dict[str, Any] = {}
        self.data = data
        self.inner: list[Env | None] = [None] * len(conjuncts)
        self.owned: list[Struct] = []  # structs made for a run of this one, released with it
        # the default's other branch, taken because the default was undefined: CUE keeps
        # the disjunction open, and a field missing here is incomplete, not an error
        self.tentative = tentative

    def _inner(self, index: int) -> Env:
        """The environment a conjunct's fields are evaluated in: this struct as the
        instance of the conjunct's literal."""
        inner = self.inner[index]
        if inner is None:
            lit, env = self.conjuncts[index]
            inner = self.inner[index] = dict(env)
            inner[lit.key] = self
        return inner

    def field(self, label: str) -> Any:
        """The field's value: every conjunct's declarations, unified."""
        found = self.memo.get(label)
        if found is _BUSY:
            raise Unsure  # a reference cycle: CUE's answer is not a plain value
        if found is not None or label in self.memo:
            return found
        if self.data is not None and label in self.data:
            return self.data[label]
        self.memo[label] = _BUSY
        try:
            value = self._evaluate(label)
        finally:
            del self.memo[label]
        self.memo[label] = value
        return value

    def _evaluate(self, label: str) -> Any:
        values = []
        for index, (lit, _) in enumerate(self.conjuncts):
            if lit.impure:
                raise Unsure
            exprs = lit.fields.get(label)
            if exprs:
                inner = self._inner(index)
                values += [e(inner) for e in exprs]
        if not values:
            raise Unsure if self.tentative else Bottom
        value = values[0]
        for other in values[1:]:
            value = unify(value, other)
        return value

    def release(self) -> None:
        """Forget what was worked out, here and in the structs it owns (each struct's
        environments hold it: a cycle only the collector would free), once no longer used."""
        for struct in self.owned:
            struct.release()
        self.owned = []
        self.memo = {}
        self.inner = [None] * len(self.conjuncts)

    def owns(self, struct: Struct) -> Struct:
        """`struct`, made for this struct's run and released with it."""
        self.owned.append(struct)
        return struct

    def given(self, lit: Literal, labels: list[str], values: list[Any]) -> Struct:
        """This struct unified with the literal `lit` whose fields have these values (already
        evaluated: the literal keeps no environment)."""
        out = Struct([*self.conjuncts, (lit, {})])
        for label, value in zip(labels, values, strict=True):
            for index, (other, _) in enumerate(self.conjuncts):
                if other.impure:
                    raise Unsure
                for expr in other.fields.get(label, ()):
                    value = unify(expr(out._inner(index)), value)
            out.memo[label] = value
        return out

    def let(self, key: int, name: str) -> Any:
        """A let declared in one of the literals (by its key)."""
        memo_key = f"\0{key}\0{name}"
        if memo_key in self.memo:
            return self.memo[memo_key]
        for index, (lit, _) in enumerate(self.conjuncts):
            if lit.key == key:
                value = lit.lets[name](self._inner(index))
                self.memo[memo_key] = value
                return value
        raise Unsure

    def labels(self) -> list[str]:
        """The regular (output) labels, in declaration order."""
        out: list[str] = []
        for lit, _ in self.conjuncts:
            if lit.impure:
                raise Unsure
            out += [label for label in lit.regular if label not in out]
        return out


class LazyList:
    """A list written in the pack: elements as (expression, environment), each evaluated
    when first needed."""

    __slots__ = ("items", "tentative", "values")

    def __init__(self, items: list[tuple[Callable[[Env], Any], Env]]) -> None:
        self.items = items
        self.values: list[Any] = [_BUSY] * len(items)
        self.tentative = False  # (see `ops.tentative`)

    def __len__(self) -> int:
        return len(self.items)

    def get(self, index: int) -> Any:
        """One element (`Bottom` past the end)."""
        if not 0 <= index < len(self.items):
            raise Bottom
        value = self.values[index]
        if value is _BUSY:
            expr, env = self.items[index]
            value = self.values[index] = expr(env)
        return value

    def __iter__(self) -> Iterator[Any]:
        return (self.get(i) for i in range(len(self.items)))


def force(value: Any) -> Any:
    """The value as plain JSON data (every lazy part evaluated); `Unsure` for a type."""
    if value.__class__ in _PLAIN:
        return value  # (a leaf: the usual case first)
    if isinstance(value, Struct):
        return {label: force(value.field(label)) for label in value.labels()}
    if isinstance(value, LazyList):
        return [force(v) for v in value]
    if isinstance(value, list):
        return [force(v) for v in value]
    if isinstance(value, dict):
        return {k: force(v) for k, v in value.items()}
    if isinstance(value, Type):
        raise Unsure
    return value


def items_of(value: Any) -> list[Any]:
    """A list's elements (data or lazy); `Bottom` for anything else."""
    if isinstance(value, list):
        return value
    if isinstance(value, LazyList):
        return list(value)
    if isinstance(value, Type):
        raise Unsure
    raise Bottom


_PLAIN = frozenset({str, int, bool, float, type(None)})


def equal(a: Any, b: Any) -> bool:
    """CUE's `==`: values of different kinds are unequal (int and float are both numbers)."""
    ta = type(a)
    if ta is type(b) and ta in _PLAIN:
        return bool(a == b)
    ka, kb = kind_of(a), kind_of(b)
    if ka != kb and not ({ka, kb} <= {"int", "float"}):
        return False
    if ka == "list":
        xs, ys = items_of(a), items_of(b)
        return len(xs) == len(ys) and all(equal(x, y) for x, y in zip(xs, ys, strict=True))
    if ka == "struct":
        fa, fb = force(a), force(b)
        return fa.keys() == fb.keys() and all(equal(fa[k], fb[k]) for k in fa)
    return bool(a == b)


def unify(a: Any, b: Any) -> Any:
    """CUE's `&` on the values the plans meet: a type and a value, equal scalars, structs
    written in the pack; anything else is left to CUE."""
    if isinstance(a, Type) or isinstance(b, Type):
        return _unify_type(a, b)
    if isinstance(a, Struct) and isinstance(b, Struct):
        return Struct(a.conjuncts + b.conjuncts)
    if kind_of(a) in ("struct", "list") or kind_of(b) in ("struct", "list"):
        raise Unsure
    if kind_of(a) != kind_of(b) or a != b:
        raise Bottom  # a conflict
    return a


def _unify_type(a: Any, b: Any) -> Any:
    if isinstance(a, Type) and isinstance(b, Type):
        if a.kind == b.kind or b.kind == "top":
            return a
        if a.kind == "top":
            return b
        raise Unsure
    t, v = (a, b) if isinstance(a, Type) else (b, a)
    assert isinstance(t, Type)
    if t.kind == "top":
        return v
    if isinstance(v, (Struct, LazyList)):
        raise Unsure
    if not t.admits(v):
        raise Bottom
    return v
