"""Where each field of the output came from, recorded where it is written, on every compile.

After kustomize's origin annotations: every write to an output object (the context build
copying the runtime's template and the runtime patches, each plugin edit, the JobSet builder,
each side object) records an `Origin` at the output path it wrote: who wrote it (a plugin, the
JobSet builder, the TrainJob or the runtime) and, when the value comes from an input, the path
of that value in the input document (`tjc explain` and the policy diagnostics turn it into
`file:line:col`). Reading a path gives the newest record on it, on an ancestor or on a
descendant: a later write replaces an earlier one, however deep either is.

The runtime's template is recorded first, as copied to the JobSet's spec (the template
itself kept, as the output started from it); `template_made` says whether it made the value
at a path: the output still holds there what the template holds (no later write reached the
path, or those that did left it as it was: a TrainJob image equal to the runtime's, a value
a later write set back). The policy diagnostics locate such a value in the runtime; any
other at the input its newest write took it from.

An origin that copies a subtree (`anchor` set, or `exact` without one: anchored where it was
recorded) maps the rest of the output path into the input by the list items' keys (name,
mountPath, containerPort), as the upserts and the strategic merge match them (the item at
the same position first, so two containers of one name stay two), so one record covers a
whole runtime template.

Recording is always on, so it must stay cheap: a write is one entry appended to a log (a
list write one entry for all its items), and writes whose origins take work to find (the
fields the runtime patches change, what the typed round trip normalized) are one `Writes`
entry, worked out only when a lookup reaches it, from indexes kept per runtime
(`PathIndex`). A lookup reads the log newest first and passes over entries that lie neither
above nor below its path. Pure; written by `compiler.core.context`,
`compiler.core.plugins.edits`, `compiler.core.compile` and the JobSet builder, read by
`compiler.explain.explainer` and `compiler.policy.check`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from functools import lru_cache
from typing import Any, Protocol

from compiler.common.diagnostics import Path, format_path
from compiler.common.jsondata import Obj, get_at, get_path
from compiler.common.records import dataclass

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


# An entry of a recorder's log (`Recorder.add`), in the order written:
#   (path, origin)                 one write;
#   (path, origin, landed)         items written into the list at `path`, at the indices
#                                  `landed`;
#   (path, source, landed, picks)  the same, the j-th item copied from the TrainJob field
#                                  `(*source, picks[j])`;
#   (path, writes, data)           the writes of a `Writes` (at or below `path`), worked out
#                                  from `data` when a lookup reaches them.
Entry = tuple[Any, ...]
Hit = tuple[Path, Origin]
LONG = 32  # items: past this many, a lookup indexes `landed` (once)


class Writes:
    """A kind of writes whose paths and origins take work to list (what the runtime patches
    or the typed round trip changed): an entry names it with the data it needs (which must
    not change after the compile), and it is worked out only when a lookup reaches it."""

    def find(self, at: Path, data: Any, path: Path) -> Hit | None:
        """The newest of these writes on `path`, an ancestor or a descendant (the caller
        checked that `path` and `at` are one above the other)."""
        raise NotImplementedError

    def writes(self, at: Path, data: Any) -> Iterator[Hit]:
        """All of them, in order (for pickling)."""
        raise NotImplementedError


class PathIndex:
    """Paths (below some output path), each with a rank: which is the newest on a path, an
    ancestor or a descendant. Built once for many compiles (a runtime's normalized fields,
    what a runtime patch changes)."""

    def __init__(self, ranked: Iterable[tuple[Path, int]]) -> None:
        # a node: [newest rank here, newest rank strictly below, children]
        self._root: list[Any] = [-1, -1, {}]
        for path, rank in ranked:
            node = self._root
            for part in path:
                node[1] = max(node[1], rank)
                node = node[2].setdefault(part, [-1, -1, {}])
            node[0] = max(node[0], rank)

    def newest(self, path: Path) -> int:
        """The highest rank on `path`, an ancestor or a descendant (-1: none)."""
        node = self._root
        best = -1
        for part in path:
            if node[0] > best:
                best = node[0]
            node = node[2].get(part)
            if node is None:
                return best
        return int(max(best, node[0], node[1]))


class TemplateSource(Protocol):
    """What gives a runtime's template (its JobSet spec `raw` as the output starts from it,
    read only; a runtime's `MergedSpecs`)."""

    def template(self, raw: Any) -> Any:
        """The template spec, as the output starts from it."""


class _Kept:
    """A template kept as it is (a recorder's, after pickling)."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    def template(self, raw: Any) -> Any:
        """The template kept."""
        return self.spec


class Recorder:
    """The origins of the output objects of one compile, keyed by output path.

    An output path starts with the object's root (`object_root`: its apiVersion and kind, and
    its name); the inputs (`trainjob`, `runtime`: the defaulted documents) and the output
    objects are registered so copied subtrees can be mapped. Writes are kept in the order
    made (`_log`, of `Entry`; writers append with `add`); a lookup reads them newest first,
    passing over those that lie neither above nor below its path. The runtime's template is
    recorded first, with its copy.
    """

    __slots__ = ("_inputs", "_log", "_outputs", "_places", "_template", "add")

    def __init__(self, inputs: dict[str, Obj] | None = None,
                 template: tuple[Path, TemplateSource, Any] | None = None,
                 copy: list[Entry] | None = None) -> None:
        """`template`: the runtime's template, copied to the output path `at` (the JobSet's
        spec), as `(at, source, raw)`: `source.template(raw)` gives it as the output started
        from it (asked only when a lookup needs it). `copy`: the entries of that copy,
        recorded first (the recorder takes the list over)."""
        self._log: list[Entry] = copy if copy is not None else []
        # one write (an `Entry`); bound to the log's own append: a compile writes often
        self.add: Callable[[Entry], None] = self._log.append
        self._inputs: dict[str, Obj] = inputs if inputs is not None else {}
        self._outputs: dict[Path, Obj] = {}
        self._template = template
        self._places: dict[int, dict[Any, int]] | None = None  # long item lists, indexed

    def __getstate__(self) -> dict[str, Any]:
        """What pickling and copying keep: the writes, those worked out on lookup listed."""
        flat: list[Entry] = []
        for entry in self._log:
            flat.extend(_writes(entry))
        template = None
        if self._template is not None:
            at, source, raw = self._template
            template = (at, source.template(raw))
        return {"log": flat, "template": template, "inputs": self._inputs,
                "outputs": self._outputs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        template = state["template"]
        self.__init__(state["inputs"],  # type: ignore[misc]
                      None if template is None else (template[0], _Kept(template[1]), None),
                      state["log"])
        self._outputs = state["outputs"]

    def add_input(self, name: str, doc: Obj) -> None:
        """Register an input document (`trainjob`, `runtime`)."""
        self._inputs[name] = doc

    def input(self, name: str) -> Obj | None:
        """A registered input document (the defaulted TrainJob or runtime)."""
        return self._inputs.get(name)

    def add_output(self, root: Path, obj: Obj) -> None:
        """Register an output object under its root (`object_root`); a JobSet's spec may be
        registered early as `{"spec": spec}`."""
        self._outputs[root] = obj

    def add_object(self, obj: Obj, origin: Origin) -> None:
        """A side object `origin` made whole (unless it or one of its root is registered:
        the JobSet builder records the JobSet's fields itself)."""
        for known in self._outputs.values():
            if known is obj:
                return
        root = root_of(obj)
        if root not in self._outputs:
            self._outputs[root] = obj
            self._log.append((root, origin))

    def record(self, path: Path, origin: Origin) -> None:
        """`origin` wrote the output at `path` (and everything below it)."""
        self._log.append((path, origin))

    def lookup(self, path: Path) -> Origin | None:
        """The origin of the output at `path` (the newest write on it, an ancestor or a
        descendant), its input path resolved; None if unrecorded."""
        size = len(path)
        for entry in reversed(self._log):
            at = entry[0]
            n = len(at)
            if (path[:n] != at) if n <= size else (at[:size] != path):
                continue
            hit = self._hit(entry, path, n, size)
            if hit is not None:
                at, origin = hit
                if origin.exact and origin.anchor is None:
                    origin = replace(origin, anchor=at)  # a copied subtree maps below `at`
                return self._resolve(origin, path)
        return None

    def template_made(self, path: Path) -> bool:
        """Whether the runtime's template made the value at `path` (below the spec it was
        copied to): the output holds there what the template holds. Then no write since
        the copy reached the path, or those that did left it as the template had it (a
        TrainJob image equal to the runtime's, a value a later write set back); where it
        differs, the newest write on the path is not the copy's (the record is complete:
        `tests/core/test_provenance.py` checks both on every golden)."""
        if self._template is None:
            return False
        at, source, raw = self._template
        n = len(at)
        if len(path) <= n or path[:n] != at:
            return False
        out = self._outputs.get((path[0], path[1]))
        return bool(get_at(out, path[2:]) == get_at(source.template(raw), path[n:]))

    def _hit(self, entry: Entry, path: Path, n: int, size: int) -> Hit | None:
        """The newest write of a log entry at `n` parts on `path` (of `size` parts), an
        ancestor or a descendant (the caller checked that they are one above the other)."""
        who = entry[1]
        if isinstance(who, Writes):
            return who.find(entry[0], entry[2], path)
        if len(entry) == 2:
            return entry[0], who
        landed = entry[2]
        if size > n:
            place = self._place(entry, path[n])
            if place is None:
                return None
        else:
            place = len(landed) - 1
        origin = who if len(entry) == 3 else trainjob_field((*who, entry[3][place]))
        return (*entry[0], landed[place]), origin

    def _place(self, entry: Entry, index: Any) -> int | None:
        """Where in the items an entry wrote the newest one that landed at `index`."""
        landed = entry[2]
        if len(landed) <= LONG:
            return next((j for j in range(len(landed) - 1, -1, -1) if landed[j] == index),
                        None)
        if self._places is None:
            self._places = {}
        places = self._places.get(id(entry))
        if places is None:  # (the log keeps the entry alive: its id stays its own)
            places = self._places[id(entry)] = {i: j for j, i in enumerate(landed)}
        return places.get(index)

    def _resolve(self, origin: Origin, path: Path) -> Origin:
        anchor = origin.anchor
        if anchor is None:
            return origin
        if len(anchor) < 2 or path[:len(anchor)] != anchor:
            return replace(origin, exact=False, anchor=None)
        out = get_path(self._outputs.get((anchor[0], anchor[1])), *anchor[2:])
        source = get_path(self._inputs.get(origin.input), *origin.path)
        mapped, found = _map(out, source, path[len(anchor):])
        return replace(origin, path=(*origin.path, *mapped), exact=origin.exact and found,
                       anchor=None)


def is_related(at: Path, path: Path) -> bool:
    """Whether a write at `at` is on `path`, an ancestor or a descendant of it."""
    n, size = len(at), len(path)
    return (path[:n] == at) if n <= size else (at[:size] == path)


def item_hit(at: Path, origin: Origin, landed: list[int], path: Path) -> Hit | None:
    """Of items `origin` wrote into the list at `at` (landing at the indices `landed`), the
    newest on `path`, an ancestor or a descendant (None: none)."""
    n, size = len(at), len(path)
    if not landed or ((path[:n] != at) if n <= size else (at[:size] != path)):
        return None
    if size <= n:
        return (*at, landed[-1]), origin
    return ((*at, path[n]), origin) if path[n] in landed else None


def _writes(entry: Entry) -> Iterator[Entry]:
    """An entry as its single writes, in order."""
    who = entry[1]
    if isinstance(who, Writes):
        yield from who.writes(entry[0], entry[2])
    elif len(entry) == 2:
        yield entry
    else:
        for place, index in enumerate(entry[2]):
            origin = who if len(entry) == 3 else trainjob_field((*who, entry[3][place]))
            yield (*entry[0], index), origin


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
    """The input item the output item at `position` came from: the one with its key, the one
    at the same position first (two containers of one name are two items)."""
    if key is not None and isinstance(item, dict) and key in item:
        same = items[position] if position < len(items) else None
        if isinstance(same, dict) and same.get(key) == item[key]:
            return position
        return next((i for i, cur in enumerate(items)
                     if isinstance(cur, dict) and cur.get(key) == item[key]), None)
    return position if position < len(items) else None


@lru_cache(maxsize=4096)
def trainjob_field(path: Path, *, exact: bool = False, default_note: str = "") -> Origin:
    """An origin in a TrainJob field (`trainJob spec.trainer.image`); the same few paths come
    back in every compile, so each origin is made once."""
    return Origin(f"trainJob {format_path(path)}", "trainjob", path, exact,
                  default_note=default_note)
