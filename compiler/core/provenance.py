"""Where each field of the output came from, recorded where it is written.

After kustomize's origin annotations: every write to an output object (the context build
copying the runtime's template and the runtime patches, each plugin edit, the JobSet builder,
each side object) records an `Origin` at the output path it wrote: who wrote it (a plugin, the
JobSet builder, the TrainJob or the runtime) and, when the value comes from an input, the path
of that value in the input document (`tjc explain` and the policy diagnostics turn it into
`file:line:col`). Reading a path gives the newest record on it, on an ancestor or on a
descendant: a later write replaces an earlier one, however deep either is.

An origin that copies a subtree (`anchor` set) maps the rest of the output path into the input
by the list items' keys (name, mountPath, containerPort), as the upserts and the strategic
merge match them, so one record covers a whole runtime template. Recording is off unless the
compile asks for it (`CompileOptions.trace`); then every method returns at once. Pure; written
by `compiler.core.context`, `compiler.core.plugins.edits`, `compiler.core.compile` and the JobSet
builder, read by `compiler.explain.explainer`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
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


def made(who: str) -> Origin:
    """An origin for a value the compiler makes (no input holds it)."""
    return Origin(who)


def copied(who: str, input_name: str, path: Path) -> Origin:
    """An origin for a value copied verbatim from an input at `path`."""
    return Origin(who, input_name, path, exact=True)


@dataclass
class _Node:
    seq: int = -1
    origin: Origin | None = None
    children: dict[Any, _Node] = field(default_factory=dict)


class Recorder:
    """The origins of the output objects of one compile, keyed by output path.

    An output path starts with the object's root (`object_root`: its apiVersion and kind, and
    its name); the inputs and the output objects are registered so copied subtrees can be
    mapped.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._root = _Node()
        self._seq = 0
        self._inputs: dict[str, Obj] = {}
        self._outputs: dict[tuple[str, str], Obj] = {}

    def add_input(self, name: str, doc: Obj) -> None:
        """Register an input document (`trainjob`, `runtime`)."""
        if self.enabled:
            self._inputs[name] = doc

    def input(self, name: str) -> Obj | None:
        """A registered input document (the defaulted TrainJob or runtime)."""
        return self._inputs.get(name)

    def add_output(self, root: Path, obj: Obj) -> None:
        """Register an output object under its root (`object_root`); a JobSet's spec may be
        registered early as `{"spec": spec}`."""
        if self.enabled:
            self._outputs[(str(root[0]), str(root[1]))] = obj

    def knows(self, root: Path) -> bool:
        """Whether an output object is registered under this root (`object_root`)."""
        return (str(root[0]), str(root[1])) in self._outputs

    def record(self, path: Path, origin: Origin) -> None:
        """`origin` wrote the output at `path` (and everything below it)."""
        if not self.enabled:
            return
        node = self._root
        for part in path:
            child = node.children.get(part)
            if child is None:
                child = node.children[part] = _Node()
            node = child
        if origin.exact and origin.anchor is None:
            origin = replace(origin, anchor=path)  # a copied subtree maps below `path`
        self._seq += 1
        node.seq, node.origin = self._seq, origin

    def record_items(self, path: Path, indices: list[int], origins: list[Origin]) -> None:
        """Items written into the list at `path`, at these indices, by these origins."""
        for index, origin in zip(indices, origins, strict=True):
            self.record((*path, index), origin)

    def lookup(self, path: Path) -> Origin | None:
        """The origin of the output at `path`, its input path resolved; None if unrecorded."""
        best: tuple[int, Origin] | None = None
        node: _Node | None = self._root
        for depth in range(len(path) + 1):
            if node is None:
                break
            if node.origin is not None and (best is None or node.seq > best[0]):
                best = (node.seq, node.origin)
            if depth < len(path):
                node = node.children.get(path[depth])
        if node is not None:
            deeper = _newest(node)
            if deeper is not None and (best is None or deeper[0] > best[0]):
                best = deeper
        if best is None:
            return None
        return self._resolve(best[1], path)

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


OFF = Recorder(enabled=False)  # records nothing, so one serves every compile that does not ask


def _newest(node: _Node) -> tuple[int, Origin] | None:
    """The newest record strictly below `node`."""
    best: tuple[int, Origin] | None = None
    stack = list(node.children.values())
    while stack:
        current = stack.pop()
        if current.origin is not None and (best is None or current.seq > best[0]):
            best = (current.seq, current.origin)
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


def trainjob_field(path: Path, *, exact: bool = False, default_note: str = "") -> Origin:
    """An origin in a TrainJob field (`trainJob spec.trainer.image`)."""
    return Origin(f"trainJob {format_path(path)}", "trainjob", path, exact,
                  default_note=default_note)
