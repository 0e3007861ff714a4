"""Where each field of the output came from, recorded where it is written, on every compile.

After kustomize's origin annotations: every write to an output object (the context build
copying the runtime's template and the runtime patches, each plugin edit, the JobSet builder,
each side object) records an `Origin` at the output path it wrote: who wrote it (a plugin, the
JobSet builder, the TrainJob or the runtime) and, when the value comes from an input, the path
of that value in the input document (`tjc explain` and the policy diagnostics turn it into
`file:line:col`). Reading a path gives the newest record on it, on an ancestor or on a
descendant: a later write replaces an earlier one, however deep either is. A write that left
the value as it was (a TrainJob image equal to the runtime's, an env var upserted again) is
recorded as such, and `lookup(path, changed=True)` passes over it: it gives the write that
made the value what it is (the policy diagnostics locate a value the runtime's template holds
in the runtime).

An origin that copies a subtree (`anchor` set, or `exact` without one: anchored where it was
recorded) maps the rest of the output path into the input by the list items' keys (name,
mountPath, containerPort), as the upserts and the strategic merge match them, so one record
covers a whole runtime template.

Recording is always on, so it must stay cheap: a record is appended to a log, and a write
whose origins take work to find (the fields the runtime patches change, what the typed round
trip normalized) is recorded as a function that lists them (`defer`), run in its place in the
log only when something is looked up. Pure; written by `compiler.core.context`,
`compiler.core.plugins.edits`, `compiler.core.compile` and the JobSet builder, read by
`compiler.explain.explainer` and `compiler.policy.check`.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from compiler.common.diagnostics import Path, format_path
from compiler.common.jsondata import Obj, get_path

# How the items of a list field are matched (as the upserts and the strategic merge do);
# items of any other list match by position.
LIST_KEYS = {"replicatedJobs": "name", "containers": "name", "initContainers": "name",
             "env": "name", "volumes": "name", "volumeMounts": "mountPath",
             "ports": "containerPort"}


@dataclass(frozen=True)
class Origin:
    """Who wrote an output field, and where in which input its value is.

    `who` is the text `tjc explain` prints (`plugin mpi`, `trainJob spec.trainer.image`).
    `input` names the input document (`trainjob` or `runtime`; empty when the compiler made the
    value) and `path` the value's path in it (the defaulted document). `exact` says the input
    holds the output value itself at `path`. `anchor`, when not None, is the output path that
    corresponds to `path`: below it the output path maps into the input by item keys.
    `default_note` is added when the (raw) input does not hold `path`: the CRD default wrote it.
    """

    who: str
    input: str = ""
    path: Path = ()
    exact: bool = False
    anchor: Path | None = None
    default_note: str = ""


def object_root(api_version: str, kind: str, name: str) -> Path:
    """The first two parts of the output paths into one object (two PodGroups of one name
    but different groups are different objects)."""
    return (f"{api_version} {kind}", name)


def root_of(obj: Obj) -> Path:
    """`object_root` of an output object."""
    meta = obj.get("metadata")
    name = meta.get("name", "") if isinstance(meta, dict) else ""
    return object_root(str(obj.get("apiVersion", "")), str(obj.get("kind", "")), str(name))


@lru_cache(maxsize=1024)
def made(who: str) -> Origin:
    """An origin for a value the compiler makes (no input holds it)."""
    return Origin(who)


def copied(who: str, input_name: str, path: Path) -> Origin:
    """An origin for a value copied verbatim from an input at `path`."""
    return Origin(who, input_name, path, exact=True)


# an output path, who wrote it, and whether the write changed the value there
Write = tuple[Path, Origin, bool]
# writes whose origins are worked out when first looked up
Deferred = Callable[[], Iterable[Write]]


@dataclass
class _Node:
    """A path of the index: the newest write on it, and the newest that changed it (their
    places in the records; -1: none)."""

    last: int = -1
    changed: int = -1
    children: dict[Any, _Node] = field(default_factory=dict)


class Recorder:
    """The origins of the output objects of one compile, keyed by output path.

    An output path starts with the object's root (`object_root`: its apiVersion and kind, and
    its name); the inputs and the output objects are registered so copied subtrees can be
    mapped. Writes are kept in the order made (`_log`); the first lookup runs the deferred
    ones (`_flat`: the writes in order, up to `_done` entries of the log). A lookup reads
    them newest first; past SCAN writes (an env list of thousands, for `tjc explain`), it
    reads an index by path instead (`_root`, up to `_indexed` of them).
    """

    SCAN = 256

    def __init__(self) -> None:
        self._log: list[Write | Deferred] = []
        # `defer(writes)`: writes made here whose origins `writes` lists when first looked
        # up; it must read only what does not change after the compile (the inputs, and
        # values it holds itself). Bound to the log's own append: every compile calls it
        # several times.
        self.defer: Callable[[Deferred], None] = self._log.append
        self._flat: list[Write] = []
        self._done = 0
        self._root = _Node()
        self._indexed = 0
        self._inputs: dict[str, Obj] = {}
        self._outputs: dict[tuple[str, str], Obj] = {}

    def __getstate__(self) -> dict[str, Any]:
        """What pickling and copying keep: the writes, the deferred ones run."""
        self._run()
        return {"flat": self._flat, "inputs": self._inputs, "outputs": self._outputs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]
        self._log.extend(state["flat"])
        self._inputs, self._outputs = state["inputs"], state["outputs"]

    def add_input(self, name: str, doc: Obj) -> None:
        """Register an input document (`trainjob`, `runtime`)."""
        self._inputs[name] = doc

    def input(self, name: str) -> Obj | None:
        """A registered input document (the defaulted TrainJob or runtime)."""
        return self._inputs.get(name)

    def add_output(self, root: Path, obj: Obj) -> None:
        """Register an output object under its root (`object_root`); a JobSet's spec may be
        registered early as `{"spec": spec}`."""
        self._outputs[(str(root[0]), str(root[1]))] = obj

    def knows(self, root: Path) -> bool:
        """Whether an output object is registered under this root (`object_root`)."""
        return (str(root[0]), str(root[1])) in self._outputs

    def record(self, path: Path, origin: Origin, changed: bool = True) -> None:
        """`origin` wrote the output at `path` (and everything below it); `changed` False: the
        value there was the same before."""
        self._log.append((path, origin, changed))

    def record_items(self, path: Path, indices: list[int], origins: list[Origin],
                     unchanged: Container[int] = ()) -> None:
        """Items written into the list at `path`, at these indices, by these origins (those
        at `unchanged` indices replaced an equal item)."""
        for index, origin in zip(indices, origins, strict=True):
            self._log.append(((*path, index), origin, index not in unchanged))

    def lookup(self, path: Path, *, changed: bool = False) -> Origin | None:
        """The origin of the output at `path`, its input path resolved; None if unrecorded.
        `changed`: of the writes that changed the value."""
        self._run()
        best = self._scan(path, changed) if len(self._flat) <= self.SCAN else \
            self._search(path, changed)
        if best < 0:
            return None
        at, origin, _ = self._flat[best]
        if origin.exact and origin.anchor is None:
            origin = replace(origin, anchor=at)  # a copied subtree maps below `at`
        return self._resolve(origin, path)

    def _scan(self, path: Path, changed: bool) -> int:
        """The place of the newest write on `path`, an ancestor or a descendant (-1: none),
        read from the writes in order."""
        size = len(path)
        for index in range(len(self._flat) - 1, -1, -1):
            at, _, changing = self._flat[index]
            if (changing or not changed) and \
                    ((at == path[:len(at)]) if len(at) <= size else (at[:size] == path)):
                return index
        return -1

    def _search(self, path: Path, changed: bool) -> int:
        """`_scan` through the index by path."""
        self._index()
        best = -1
        node: _Node | None = self._root
        for depth in range(len(path) + 1):
            if node is None:
                break
            best = max(best, node.changed if changed else node.last)
            if depth < len(path):
                node = node.children.get(path[depth])
        if node is not None:
            best = max(best, _newest(node, changed))
        return best

    def _run(self) -> None:
        """Run the deferred writes not run yet, in their place."""
        flat = self._flat
        for entry in self._log[self._done:]:
            if callable(entry):
                flat.extend(entry())
            else:
                flat.append(entry)
        self._done = len(self._log)

    def _index(self) -> None:
        """Index by path the writes not indexed yet."""
        flat = self._flat
        for index in range(self._indexed, len(flat)):
            path, _, changing = flat[index]
            node = self._root
            for part in path:
                child = node.children.get(part)
                if child is None:
                    child = node.children[part] = _Node()
                node = child
            node.last = index
            if changing:
                node.changed = index
        self._indexed = len(flat)

    def _resolve(self, origin: Origin, path: Path) -> Origin:
        anchor = origin.anchor
        if anchor is None:
            return origin
        if len(anchor) < 2 or path[:len(anchor)] != anchor:
            return replace(origin, exact=False, anchor=None)
        out = get_path(self._outputs.get((str(anchor[0]), str(anchor[1]))), *anchor[2:])
        source = get_path(self._inputs.get(origin.input), *origin.path)
        mapped, found = _map(out, source, path[len(anchor):])
        return replace(origin, path=(*origin.path, *mapped), exact=origin.exact and found,
                       anchor=None)


def _newest(node: _Node, changed: bool) -> int:
    """The place of the newest write strictly below `node` (-1: none)."""
    best = -1
    stack = list(node.children.values())
    while stack:
        current = stack.pop()
        best = max(best, current.changed if changed else current.last)
        stack.extend(current.children.values())
    return best


def _map(out: Any, source: Any, rest: Path) -> tuple[Path, bool]:
    """`rest` (a path below `out`) as a path below `source`: map keys match, list items match
    by their key field (else by position). Returns the mapped path, as deep as the input goes,
    and whether the input holds the whole path."""
    mapped: list[str | int] = []
    field: Any = None
    for part in rest:
        if isinstance(out, list) and isinstance(part, int) and isinstance(source, list):
            item = out[part] if 0 <= part < len(out) else None
            index = _same_item(item, source, part, LIST_KEYS.get(field))
            if index is None:
                return tuple(mapped), False
            out, source = item, source[index]
            mapped.append(index)
        elif isinstance(out, dict) and isinstance(source, dict) and part in source:
            out, source = out.get(part), source[part]
            mapped.append(part)
            field = part
        else:
            return tuple(mapped), False
    return tuple(mapped), True


def _same_item(item: Any, items: list[Any], position: int, key: str | None) -> int | None:
    if key is not None and isinstance(item, dict) and key in item:
        return next((i for i, cur in enumerate(items)
                     if isinstance(cur, dict) and cur.get(key) == item[key]), None)
    return position if position < len(items) else None


@lru_cache(maxsize=4096)
def trainjob_field(path: Path, *, exact: bool = False, default_note: str = "") -> Origin:
    """An origin in a TrainJob field (`trainJob spec.trainer.image`); the same few paths come
    back in every compile, so each origin is made once."""
    return Origin(f"trainJob {format_path(path)}", "trainjob", path, exact,
                  default_note=default_note)
