"""The explain application: why the output of one TrainJob looks the way it does.

Compiles a TrainJob (the compile records where each output field came from:
`compiler.core.provenance`), then lists the active plugins in graph order (with what each
requires and provides) and, for every field of the output that a plugin or the TrainJob set
(everything that differs from the runtime's own JobSet template), the origin the compile
recorded for it: who wrote it and from which input line. It guesses nothing: what it prints is
what the writers recorded. Also renders the plugin graph in Graphviz format. Called by
`tjc explain`; no I/O beyond `Document`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from compiler.common.diagnostics import Diagnostic, Path, format_path
from compiler.common.jsondata import Obj, get_path
from compiler.common.records import dataclass
from compiler.core.compile import (
    CompileResult,
    PreparedRuntime,
    compile_defaulted,
    prepare_runtime,
)
from compiler.core.plugins import registry
from compiler.core.plugins.base import PluginSpec
from compiler.core.plugins.graph import build_graph, plugin_order
from compiler.core.provenance import Recorder, root_of
from compiler.core.release import DEFAULT as DEFAULT_RELEASE
from compiler.core.release import Release
from compiler.core.resolve import RUNTIME_KINDS, not_found, runtime_key, wanted_key
from compiler.io import emit
from compiler.io.loader import Document
from compiler.kube.defaults import apply_defaults, default_in_place
from compiler.kube.structural import sanitize

KEYS = {"replicatedJobs": "name", "containers": "name", "initContainers": "name",
        "env": "name", "volumes": "name", "volumeMounts": "mountPath", "ports": "containerPort"}
ITEM_LISTS = ("env", "volumes", "volumeMounts", "ports", "envFrom")


@dataclass(frozen=True)
class Entry:
    """One output field and who set it."""

    path: Path
    value: Any
    who: str
    source: tuple[Document, Path] | None = None

    def text(self) -> str:
        """`path = value  <- who (file:line:col)`."""
        where = f" ({self.source[0].locate(self.source[1])})" if self.source else ""
        return f"{format_path(self.path)} = {_show(self.value)}  <- {self.who}{where}"


def _show(value: Any) -> str:
    if isinstance(value, dict) and set(value) <= {"name", "value", "valueFrom"} \
            and "name" in value:
        if "value" in value:
            return f"{value['name']}={json.dumps(value['value'])}"
        return f"{value['name']} from {_compact(value.get('valueFrom'))}"
    return _compact(value)


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return emit.scalar_string(value)
    return json.dumps(value, sort_keys=True, separators=(", ", ": "), ensure_ascii=False)


class Explainer:
    """Lists every changed output field with the origin the compile recorded for it."""

    def __init__(self, tj: Document, runtime: Document,
                 prepared: PreparedRuntime | None = None,
                 release: Release = DEFAULT_RELEASE) -> None:
        self.tj, self.runtime = tj, runtime
        self.kind = str(runtime.data.get("kind"))
        self.prepared = prepared or prepare_runtime(runtime.data, release)
        version = self.prepared.release.version
        data, _ = sanitize("TrainJob", tj.data, subject="trainjob", release=version)
        self.trainjob = default_in_place("TrainJob", data, version)
        self.result: CompileResult = compile_defaulted(self.trainjob, self.prepared)
        self.origins = self.result.origins or Recorder()
        self._inputs = {"trainjob": tj, "runtime": runtime}

    def plugins(self) -> list[PluginSpec]:
        """The active plugins in graph order."""
        names = set(self.result.plugins)
        return plugin_order([p for p in registry() if p.name in names])

    def entries(self, obj: Obj) -> Iterator[Entry]:
        """Every field of one output object that a plugin or the TrainJob set."""
        if obj.get("kind") == "JobSet":
            yield from self._jobset(obj)
        else:
            yield from self._side_object(obj)

    def _side_object(self, obj: Obj) -> Iterator[Entry]:
        """An object a plugin builds whole: each of its spec/data fields."""
        root = root_of(obj)
        for key in ("type", "immutable", "data", "spec"):
            if key in obj:
                yield from self._leaves(root, obj[key], (key,))

    def _leaves(self, root: Path, value: Any, path: Path) -> Iterator[Entry]:
        if isinstance(value, dict) and value:
            for key in sorted(value):
                yield from self._leaves(root, value[key], (*path, key))
        else:
            yield self.entry(root, path, value)

    def _jobset(self, obj: Obj) -> Iterator[Entry]:
        root = root_of(obj)
        yield self.entry(root, ("metadata", "name"), obj["metadata"]["name"])
        if obj["metadata"].get("ownerReferences"):
            yield self.entry(root, ("metadata", "ownerReferences"),
                             "TrainJob controller reference")
        for field in ("labels", "annotations"):
            for key, value in sorted((obj["metadata"].get(field) or {}).items()):
                yield self.entry(root, ("metadata", field, key), value)
        yield from self._spec_entries(self.prepared.spec, obj["spec"], ("spec",))

    def _spec_entries(self, base: Any, final: Any, path: Path) -> Iterator[Entry]:
        """The fields that differ from the runtime's own template (what the compile wrote)."""
        if isinstance(final, dict) and final and (isinstance(base, dict) or base is None):
            for key in sorted(final):
                yield from self._spec_entries((base or {}).get(key), final[key], (*path, key))
        elif isinstance(final, list) and path[-1] in KEYS:
            yield from self._keyed_list(base if isinstance(base, list) else [], final, path)
        elif final != base:
            yield self.attribute(path, final)

    def _keyed_list(self, base: list[Any], final: list[Any], path: Path) -> Iterator[Entry]:
        key = KEYS[str(path[-1])]
        by_key = _first_by(key, base)
        for index, item in enumerate(final):
            old = by_key.get(_hashable(item.get(key))) if isinstance(item, dict) else None
            if path[-1] in ITEM_LISTS:
                if item != old:
                    yield self.attribute((*path, index), item)
            else:
                yield from self._spec_entries(old if old is not None else {}, item,
                                              (*path, index))

    def attribute(self, path: Path, value: Any) -> Entry:
        """Who set the field at `path` (a path into the JobSet object), as recorded."""
        return self.entry(root_of(self._jobset_object()), path, value)

    def entry(self, root: Path, path: Path, value: Any) -> Entry:
        """The recorded origin of the field at `path` of the object `root`."""
        origin = self.origins.lookup((*root, *path))
        if origin is None:
            return Entry(path, value, "unrecorded")
        doc = self._inputs.get(origin.input)
        if doc is None:
            return Entry(path, value, origin.who)
        if origin.default_note and get_path(doc.data, *origin.path) is None:
            return Entry(path, value, origin.who + origin.default_note)
        return Entry(path, value, origin.who, (doc, origin.path))

    def _jobset_object(self) -> Obj:
        return next((o for o in self.result.objects if o.get("kind") == "JobSet"), {})

    def text(self) -> str:
        """The whole explanation."""
        meta = _mapping(self.trainjob.get("metadata"))
        rmeta = _mapping(self.runtime.data.get("metadata"))
        lines = [f"TrainJob {meta.get('namespace', '')}/{meta.get('name', '')} "
                 f"({self.tj.locate()}) with {self.kind} {rmeta.get('name', '')} "
                 f"({self.runtime.locate()})", "", "plugins, in graph order:"]
        for index, plugin in enumerate(self.plugins(), 1):
            lines.append(f"  {index}. {plugin.name} [{plugin.policy}] requires: "
                         f"{', '.join(sorted(plugin.requires)) or '-'}; provides: "
                         f"{', '.join(sorted(plugin.provides)) or '-'}")
        lines += ["", "fields set by a plugin or the TrainJob:"]
        for obj in self.result.objects:
            meta = _mapping(obj.get("metadata"))
            lines.append(f"  {obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name', '')}")
            lines += [f"    {entry.text()}" for entry in self.entries(obj)]
        lines += [f"  {d.text()}" for d in self.result.diagnostics]
        return "\n".join(lines) + "\n"

    def dot(self) -> str:
        """The plugin graph of this TrainJob in Graphviz format."""
        plugins = self.plugins()
        graph = build_graph(plugins)
        out = ["digraph plugins {", "  rankdir=LR;", "  node [shape=box];"]
        for plugin in plugins:
            out.append(f'  "{plugin.name}" [label="{plugin.name}\\n{plugin.policy}"];')
        for source, target, data in sorted(graph.edges(data=True)):
            facts = ", ".join(sorted(data.get("facts", ())))
            out.append(f'  "{source}" -> "{target}" [label="{facts}"];')
        return "\n".join([*out, "}"]) + "\n"


def _mapping(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _hashable(value: Any) -> Any:
    """A value usable as a dict key (its JSON text when it is a list or mapping)."""
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, (dict, list)) \
        else value


def _first_by(key: str, items: list[Any]) -> dict[Any, Any]:
    """The first mapping of `items` for each value of `key`."""
    out: dict[Any, Any] = {}
    for item in items:
        if isinstance(item, dict):
            out.setdefault(_hashable(item.get(key)), item)
    return out


def find_runtime(trainjob: Document, runtimes: list[Document]) -> Document | Diagnostic:
    """The runtime a TrainJob references among `runtimes` (first match), or why not."""
    key = wanted_key(apply_defaults("TrainJob", trainjob.data))
    if isinstance(key, Diagnostic):
        return key.at(trainjob.locate(key.path))
    for doc in runtimes:
        if doc.data.get("kind") in RUNTIME_KINDS and runtime_key(doc.data) == key:
            return doc
    missing = not_found(key)
    return missing.at(trainjob.locate(missing.path))
