"""`dataclass`: `dataclasses.dataclass` with less of its cost at import.

`dataclasses.dataclass` writes every method it adds as Python source and compiles it when the
class is made, about 50 us a method and six methods for a frozen class. A one-file
`tjc validate` makes 54 such classes while it imports, which was 20 ms of its start-up
(measured with the bytecode compiled). This `dataclass` has `dataclasses` write only what is
written per class (`__init__`, and a frozen class's `__setattr__` and `__delattr__`) and adds
`__repr__`, `__eq__`, `__hash__` and the order methods as closures over the class's fields,
which behave as the written ones of CPython 3.10 and 3.11 do: the fields compared as a tuple
and only with an instance of the same class, the hash of that tuple (by each field's `hash`
and `compare`) under dataclasses' own rules for when a hash is added, the `field=value!r`
repr, `...` for a repr that meets itself, no method a class defines itself replaced.
`dataclasses.fields`, `replace` and `asdict` work as before.

For type checkers it is `dataclasses.dataclass` itself.
"""

from __future__ import annotations

import dataclasses
import operator
import reprlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:
    def dataclass(cls: type | None = None, /, *, repr: bool = True, eq: bool = True,
                  order: bool = False, unsafe_hash: bool = False, frozen: bool = False,
                  **rest: Any) -> Any:
        """As `dataclasses.dataclass` (same parameters, same class)."""
        if order and not eq:
            raise ValueError("eq must be true if order is true")

        def wrap(cls: type) -> type:
            explicit_hash = _has_explicit_hash(cls)
            made: type = dataclasses.dataclass(cls, repr=False, eq=False, frozen=frozen,
                                               **rest)
            fields = dataclasses.fields(made)
            if repr:
                _add(made, "__repr__", _repr([f.name for f in fields if f.repr]))
            compared = _getter([f.name for f in fields if f.compare])
            if eq:
                _add(made, "__eq__", _compare(operator.eq, compared))
            if order:
                for name, op in _ORDER:
                    if not _add(made, name, _compare(op, compared)):
                        raise TypeError(f"Cannot overwrite attribute {name} in class "
                                        f"{made.__name__}. Consider using functools."
                                        "total_ordering")
            _hash(made, (unsafe_hash, eq, frozen, explicit_hash),
                  [f.name for f in fields if (f.compare if f.hash is None else f.hash)])
            return made
        return wrap if cls is None else wrap(cls)

_ORDER = (("__lt__", operator.lt), ("__le__", operator.le), ("__gt__", operator.gt),
          ("__ge__", operator.ge))


def _has_explicit_hash(cls: type) -> bool:
    """Whether the class sets `__hash__` itself (None set by Python for an `__eq__` of its
    own does not count), as dataclasses decides it."""
    found = cls.__dict__.get("__hash__", dataclasses.MISSING)
    return not (found is dataclasses.MISSING or (found is None and "__eq__" in cls.__dict__))


def _add(cls: type, name: str, fn: Callable[..., Any]) -> bool:
    """Set a method unless the class defines it; whether it did."""
    if name in cls.__dict__:
        return False
    setattr(cls, name, _named(cls, name, fn))
    return True


def _named(cls: type, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The method, named as the class's own."""
    fn.__name__, fn.__qualname__ = name, f"{cls.__qualname__}.{name}"
    return fn


def _getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of the named fields of an instance."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        one = operator.attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _compare(op: Callable[[Any, Any], Any], fields: Callable[[Any], tuple[Any, ...]]
             ) -> Callable[[Any, Any], Any]:
    def method(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return op(fields(self), fields(other))
        return NotImplemented
    return method


def _repr(names: list[str]) -> Callable[[Any], str]:
    @reprlib.recursive_repr(fillvalue="...")
    def method(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"
    return method


def _hash(cls: type, key: tuple[bool, bool, bool, bool], names: list[str]) -> None:
    """dataclasses' table: (unsafe_hash, eq, frozen, has an explicit hash) -> what to do."""
    unsafe_hash, eq, frozen, explicit = key
    if unsafe_hash and explicit:
        raise TypeError(f"Cannot overwrite attribute __hash__ in class {cls.__name__}")
    if explicit or not (unsafe_hash or eq):
        return
    if eq and not frozen and not unsafe_hash:
        cls.__hash__ = None  # type: ignore[assignment]
        return
    fields = _getter(names)

    def method(self: Any) -> int:
        return hash(fields(self))
    cls.__hash__ = _named(cls, "__hash__", method)  # type: ignore[method-assign]
