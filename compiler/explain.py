"""The explain application: why the output of one TrainJob looks the way it does.

Compiles a TrainJob with tracing on, then lists the active plugins in graph order (with what
each requires and provides) and, for every field of the output that a plugin or the TrainJob
set (everything that differs from the runtime's own JobSet template), who set it and from which
input line. Also renders the plugin graph in Graphviz format. Called by `tjc explain`; no I/O
beyond `Document`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from compiler import emit
from compiler.compile import CompileResult, PreparedRuntime, compile_defaulted, prepare_runtime
from compiler.context import ANCESTOR_LABEL, TRAINER, CompileOptions, merge_patches, runtime_patches
from compiler.data import Obj, fast_copy, get_path
from compiler.defaults import apply_defaults, default_in_place
from compiler.diagnostics import Diagnostic, Path, format_path
from compiler.loader import Document
from compiler.plugins import REGISTRY
from compiler.plugins.base import (
    AddInitContainer,
    PluginSpec,
    SetCount,
    SetPodMetadata,
    UpsertEnv,
    UpsertMounts,
    UpsertPorts,
    UpsertVolumes,
)
from compiler.plugins.graph import build_graph, plugin_order
from compiler.resolve import RUNTIME_KINDS, not_found, runtime_key, wanted_key
from compiler.structural import sanitize

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
    """Attributes every changed output field to a plugin, the TrainJob or a runtime patch."""

    def __init__(self, tj: Document, runtime: Document,
                 prepared: PreparedRuntime | None = None) -> None:
        self.tj, self.runtime = tj, runtime
        kind = str(runtime.data.get("kind"))
        self.prepared = prepared or prepare_runtime(runtime.data)
        data, _ = sanitize("TrainJob", tj.data, subject="trainjob")
        self.trainjob = default_in_place("TrainJob", data)
        self.result: CompileResult = compile_defaulted(
            self.trainjob, self.prepared, options=CompileOptions(trace=True))
        self.kind = kind
        self.patch_steps = self._patch_steps()
        # Lookups by key, built once: explaining must stay linear in the size of the input.
        self._env_index: dict[Any, int] | None = None
        self._edit_keys: dict[int, set[Any]] = {}

    def _patch_steps(self) -> list[Obj]:
        """The JobSet spec after 0, 1, 2, ... runtime patches."""
        patches = runtime_patches(self.trainjob)
        return [merge_patches(fast_copy(self.prepared.spec), patches[:k])
                for k in range(len(patches) + 1)]

    @property
    def trainer(self) -> Obj:
        value = (self.trainjob.get("spec") or {}).get("trainer")
        return value if isinstance(value, dict) else {}

    def plugins(self) -> list[PluginSpec]:
        """The active plugins in graph order."""
        names = set(self.result.plugins)
        return plugin_order([p for p in REGISTRY if p.name in names])

    def entries(self, obj: Obj) -> Iterator[Entry]:
        """Every field of one output object that a plugin or the TrainJob set."""
        if obj.get("kind") == "JobSet":
            yield from self._jobset(obj)
        else:
            yield from self._side_object(obj)

    def _side_object(self, obj: Obj) -> Iterator[Entry]:
        """An object a plugin builds whole: each of its spec/data fields is the plugin's."""
        plugin = next((name for name, item in self.result.trace if item is obj), "?")
        for key in ("type", "immutable", "data", "spec"):
            if key in obj:
                yield from self._leaves(obj[key], (key,), f"plugin {plugin}")

    def _leaves(self, value: Any, path: Path, who: str) -> Iterator[Entry]:
        if isinstance(value, dict) and value:
            for key in sorted(value):
                yield from self._leaves(value[key], (*path, key), who)
        else:
            yield Entry(path, value, who)

    def _jobset(self, obj: Obj) -> Iterator[Entry]:
        yield Entry(("metadata", "name"), obj["metadata"]["name"], "trainJob metadata.name",
                    (self.tj, ("metadata", "name")))
        if obj["metadata"].get("ownerReferences"):
            yield Entry(("metadata", "ownerReferences"), "TrainJob controller reference",
                        "trainJob metadata.uid", (self.tj, ("metadata", "uid")))
        yield from self._propagated(obj["metadata"])
        base = self.prepared.spec
        yield from self._spec_entries(base, obj["spec"], ("spec",))

    def _propagated(self, metadata: Obj) -> Iterator[Entry]:
        """JobSet labels/annotations: the last runtime patch that sets a key, else the
        runtime template's metadata."""
        for field in ("labels", "annotations"):
            for key, value in sorted((metadata.get(field) or {}).items()):
                source: tuple[Document, Path] = (
                    self.runtime, ("spec", "template", "metadata", field, key))
                who = f"runtime spec.template.metadata.{field}"
                for i, patch in enumerate(runtime_patches(self.trainjob)):
                    path: Path = ("spec", "runtimePatches", i, "trainingRuntimeSpec",
                                  "template", "metadata", field, key)
                    if get_path(self.trainjob, *path) is not None:
                        source = (self.tj, path)
                        who = f"trainJob spec.runtimePatches[{i}] (manager " \
                              f"{patch.get('manager', '')})"
                yield Entry(("metadata", field, key), value, who, source)

    def _spec_entries(self, base: Any, final: Any, path: Path) -> Iterator[Entry]:
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
        """Who set the field at `path` (a path into the JobSet object)."""
        for rule in (self._count, self._added_init, self._trainer_field, self._env,
                     self._resources,
                     self._suspend, self._traced, self._initializer, self._patched):
            found = rule(path, value)
            if found is not None:
                return found
        return Entry(path, value, "JobSet builder")

    def _job_index(self, path: Path) -> int | None:
        return path[2] if len(path) > 2 and path[1] == "replicatedJobs" and isinstance(
            path[2], int) else None

    def _count(self, path: Path, value: Any) -> Entry | None:
        if path[-1] not in ("parallelism", "completions", "replicas"):
            return None
        if path[-1] == "replicas":
            return Entry(path, value, "JobSet builder (initializer and trainer jobs run once)")
        index = self._job_index(path)
        plugin = next((name for name, edit in self.result.trace
                       if isinstance(edit, SetCount) and edit.pod_set == index), None)
        if plugin is not None and "numNodes" in self.trainer:
            mpi = ((self.runtime.data.get("spec") or {}).get("mlPolicy") or {}).get("mpi") or {}
            minus = " (minus one: the launcher runs as a node)" if plugin == "mpi" and \
                mpi.get("runLauncherAsNode") is True else ""
            return Entry(path, value, f"trainJob spec.trainer.numNodes{minus}, via plugin "
                         f"{plugin}", (self.tj, ("spec", "trainer", "numNodes")))
        rjob = None if index is None else get_path(self._jobset_object(), "spec",
                                                   "replicatedJobs", index)
        ancestor = get_path(rjob, "template", "metadata", "labels", ANCESTOR_LABEL)
        ml = (self.runtime.data.get("spec") or {}).get("mlPolicy")
        if ancestor == TRAINER and isinstance(ml, dict):
            source: Path = ("spec", "mlPolicy", "numNodes")
            return Entry(path, value, "runtime spec.mlPolicy.numNodes (CRD default 1 when "
                         "unset), via the trainer pod-set count", (self.runtime, source))
        return Entry(path, value, "the job template's parallelism (default 1), written as the "
                     "pod-set count by the JobSet builder")

    def _added_init(self, path: Path, value: Any) -> Entry | None:
        """Everything in an init container a plugin added (flux's flux-installer)."""
        if "initContainers" not in path:
            return None
        at = path.index("initContainers")
        container = get_path(self._jobset_object(), *path[:at + 2])
        name = container.get("name") if isinstance(container, dict) else None
        for plugin, edit in self.result.trace:
            if isinstance(edit, AddInitContainer) and edit.container.get("name") == name and \
                    edit.pod_set == self._job_index(path):
                return Entry(path, value, f"plugin {plugin} (init container it adds)")
        return None

    def _trainer_field(self, path: Path, value: Any) -> Entry | None:
        if path[-1] not in ("image", "command", "args") or path[-1] not in self.trainer or \
                "initContainers" in path:
            return None
        rewritten = path[-1] == "command" and value != self.trainer.get("command")
        by = next((name for name, _ in self.result.trace if name in ("torch", "flux")), None)
        extra = {"torch": ", extended by plugin torch (TorchTune)",
                 "flux": ", rewritten by plugin flux (the Flux entrypoint runs it)"}
        who = f"trainJob spec.trainer.{path[-1]}" + (extra[by] if rewritten and by else "")
        return Entry(path, value, who, (self.tj, ("spec", "trainer", path[-1])))

    def _env(self, path: Path, value: Any) -> Entry | None:
        if len(path) < 2 or path[-2] != "env" or not isinstance(value, dict):
            return None
        if self._env_index is None:
            env = self.trainer.get("env")
            self._env_index = {}
            for i, item in enumerate(env if isinstance(env, list) else []):
                if isinstance(item, dict):
                    self._env_index.setdefault(_hashable(item.get("name")), i)
        index = self._env_index.get(_hashable(value.get("name")))
        if index is None:
            return None
        return Entry(path, value, f"trainJob spec.trainer.env[{index}]",
                     (self.tj, ("spec", "trainer", "env", index)))

    def _resources(self, path: Path, value: Any) -> Entry | None:
        if len(path) < 3 or path[-3] != "resources":
            return None
        source: Path = ("spec", "trainer", "resourcesPerNode", path[-2], path[-1])
        if get_path(self.trainjob, *source) is None:
            return None
        return Entry(path, value, f"trainJob {format_path(source)}", (self.tj, source))

    def _suspend(self, path: Path, value: Any) -> Entry | None:
        if path != ("spec", "suspend"):
            return None
        source: Path = ("spec", "suspend")
        if get_path(self.tj.data, *source) is None:
            return Entry(path, value, "trainJob spec.suspend (CRD default)")
        return Entry(path, value, "trainJob spec.suspend", (self.tj, source))

    def _traced(self, path: Path, value: Any) -> Entry | None:
        """An edit some plugin made: env, ports, mounts and volumes by their key, scheduler
        labels and annotations by name."""
        index = self._job_index(path)
        for name, edit in reversed(self.result.trace):
            if getattr(edit, "pod_set", index) == index and self._edit_made(edit, path, value):
                return Entry(path, value, f"plugin {name}")
        return None

    def _edit_made(self, edit: Any, path: Path, value: Any) -> bool:
        if isinstance(edit, SetPodMetadata):
            return len(path) > 1 and path[-2] == edit.kind and any(
                key == path[-1] for key, _ in edit.items)
        fields = {UpsertEnv: ("env", "name"), UpsertPorts: ("ports", "containerPort"),
                  UpsertMounts: ("volumeMounts", "mountPath"), UpsertVolumes: ("volumes", "name")}
        field, key = fields.get(type(edit), ("", ""))
        if len(path) < 2 or path[-2] != field or not isinstance(value, dict):
            return False
        keys = self._edit_keys.get(id(edit))
        if keys is None:
            keys = self._edit_keys[id(edit)] = {_hashable(item.get(key)) for item in edit.items}
        if _hashable(value.get(key)) not in keys:
            return False
        if isinstance(edit, UpsertVolumes):
            return True
        container = get_path(self._jobset_object(), *path[:-2])
        return isinstance(container, dict) and container.get("name") == edit.container

    def _jobset_object(self) -> Obj:
        return next((o for o in self.result.objects if o.get("kind") == "JobSet"), {})

    def _initializer(self, path: Path, value: Any) -> Entry | None:
        initializer = (self.trainjob.get("spec") or {}).get("initializer") or {}
        if not initializer or not any(p in ("env", "envFrom") for p in path):
            return None
        for key in ("dataset", "model"):
            if key in initializer:
                source: Path = ("spec", "initializer", key)
                return Entry(path, value, f"trainJob {format_path(source)}", (self.tj, source))
        return None

    def _patched(self, path: Path, value: Any) -> Entry | None:
        inner = path[1:]
        last = None
        for k in range(1, len(self.patch_steps)):
            if get_path(self.patch_steps[k], *inner) != get_path(self.patch_steps[k - 1], *inner):
                last = k - 1
        if last is None:
            return None
        source: Path = ("spec", "runtimePatches", last)
        manager = runtime_patches(self.trainjob)[last].get("manager", "")
        return Entry(path, value, f"trainJob {format_path(source)} (manager {manager})",
                     (self.tj, source))

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
