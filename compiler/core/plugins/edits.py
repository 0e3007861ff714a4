"""Apply plugin edits to the context with upstream's upsert rules.

Called by `compiler.core.compile` after each plugin phase, so the next plugin sees the result.
Each write is recorded with the plugin's name in the context's origin recorder
(`compiler.core.provenance`). Pure (mutates only the context it is given, which the compile
owns).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

from compiler.common.diagnostics import Path, error
from compiler.common.errors import CompileError
from compiler.common.jsondata import Obj, fast_copy, get_at
from compiler.core import upsert
from compiler.core.context import POD_SPEC, Context, PodSet
from compiler.core.plugins.base import (
    AddInitContainer,
    Edit,
    SetCount,
    SetFact,
    SetPodMetadata,
    SetTrainerCommand,
    UpsertEnv,
    UpsertMounts,
    UpsertPorts,
    UpsertVolumes,
)
from compiler.core.provenance import Hit, Origin, Writes, item_hit, made


def apply_edits(ctx: Context, edits: Sequence[Edit], plugin: str) -> None:
    """Apply a plugin's edits to the context, in order, and record what they wrote as
    `plugin`'s (one entry: the list items are located when looked up)."""
    landed = [apply_edit(ctx, edit, plugin) for edit in edits]
    ctx.origins.add((ctx.root, EDIT_WRITES, (plugin, edits, landed, ctx.spec)))


def apply_edit(ctx: Context, edit: Edit, plugin: str = "") -> list[int] | None:
    """Apply one edit to the context (list items are copied: edits stay the plugin's);
    the indices list items landed at. What the JobSet builder writes later (the count, pod
    metadata, the command) gets `plugin` as its origin here."""
    if isinstance(edit, SetCount):
        ctx.pod_sets[edit.pod_set].count = edit.count
        ctx.pod_sets[edit.pod_set].count_origin = _count_origin(edit.note, plugin)
    elif isinstance(edit, (UpsertEnv, UpsertPorts, UpsertMounts)):
        apply = _UPSERTS[type(edit)][1]
        container = _container(ctx.pod_sets[edit.pod_set], edit.container, edit.init)
        return apply(container, fast_copy(list(edit.items)))
    elif isinstance(edit, UpsertVolumes):
        pod_spec = ctx.pod_sets[edit.pod_set].pod_spec
        return upsert.upsert_volumes(pod_spec, fast_copy(list(edit.items)))
    elif isinstance(edit, SetPodMetadata):
        target = ctx.pod_labels if edit.kind == "labels" else ctx.pod_annotations
        target.update(dict(edit.items))
        by = _plugin(plugin)
        ctx.pod_meta_origins.update({(edit.kind, key): by for key, _ in edit.items})
    elif isinstance(edit, SetTrainerCommand):
        ctx.trainer_command = list(edit.command)
        ctx.clear_trainer_args = ctx.clear_trainer_args or edit.clear_args
        ctx.command_origin = _command_origin(edit.how) if "command" in (ctx.trainer or {}) \
            else _plugin(plugin)
    elif isinstance(edit, AddInitContainer):
        inits = ctx.pod_sets[edit.pod_set].pod_spec.setdefault("initContainers", [])
        inits.append(fast_copy(edit.container))
        return [len(inits) - 1]
    elif isinstance(edit, SetFact):
        ctx.facts[edit.key] = edit.value
    return None


class _EditWrites(Writes):
    """The list items a plugin's edits wrote. `data`: the plugin, its edits, where each
    edit's items landed (None: not a list write) and the JobSet spec they went into (where
    the container an edit names is found again: containers are only appended after the
    edits find them, so the first of a name stays the first)."""

    def find(self, at: Path, data: Any, path: Path) -> Hit | None:
        plugin, edits, landed, spec = data
        job = len(at) + 2  # where the job's index is in the path (below spec.replicatedJobs)
        deep = len(path) > job + 5 and path[job - 2:job] == ("spec", "replicatedJobs")
        for edit, places in zip(reversed(edits), reversed(landed), strict=True):
            if not places or not isinstance(edit, LIST_EDITS):
                continue
            if deep and (path[job] != edit.pod_set or path[job + 5] != _list_name(edit) or (
                    len(path) > job + 7 and isinstance(edit, (UpsertEnv, UpsertPorts,
                                                              UpsertMounts))
                    and path[job + 7] != _UPSERTS[type(edit)][0])):
                continue  # (another job's, another list, another field of a container)
            hit = item_hit(_list_path(at, spec, edit), _origin(edit, plugin), places, path)
            if hit is not None:
                return hit
        return None

    def writes(self, at: Path, data: Any) -> Iterator[Hit]:
        plugin, edits, landed, spec = data
        for edit, places in zip(edits, landed, strict=True):
            if not (places and isinstance(edit, LIST_EDITS)):
                continue
            for index in places:
                yield (*_list_path(at, spec, edit), index), _origin(edit, plugin)


EDIT_WRITES = _EditWrites()
LIST_EDITS = (UpsertEnv, UpsertPorts, UpsertMounts, UpsertVolumes, AddInitContainer)


def _list_path(root: Path, spec: Obj,
               edit: UpsertEnv | UpsertPorts | UpsertMounts | UpsertVolumes | AddInitContainer
               ) -> Path:
    """The output path of the list a list edit wrote into."""
    at = (*root, "spec", "replicatedJobs", edit.pod_set, *POD_SPEC)
    if isinstance(edit, UpsertVolumes):
        return (*at, "volumes")
    if isinstance(edit, AddInitContainer):
        return (*at, "initContainers")
    key = "initContainers" if edit.init else "containers"
    pod_spec = get_at(spec, ("replicatedJobs", edit.pod_set, *POD_SPEC))
    k = next(k for k, c in enumerate(pod_spec[key]) if c.get("name") == edit.container)
    return (*at, key, k, _UPSERTS[type(edit)][0])


def _list_name(edit: UpsertEnv | UpsertPorts | UpsertMounts | UpsertVolumes | AddInitContainer
               ) -> str:
    """The pod spec's list (or the list of containers) a list edit wrote into."""
    if isinstance(edit, UpsertVolumes):
        return "volumes"
    if isinstance(edit, AddInitContainer) or edit.init:
        return "initContainers"
    return "containers"


def _origin(edit: Edit, plugin: str) -> Origin:
    if isinstance(edit, AddInitContainer):
        return made(f"plugin {plugin} (init container it adds)")
    return _plugin(plugin)


@lru_cache(maxsize=256)
def _plugin(plugin: str) -> Origin:
    """What a plugin makes."""
    return made(f"plugin {plugin}")


@lru_cache(maxsize=256)
def _count_origin(note: str, plugin: str) -> Origin:
    return Origin(f"trainJob spec.trainer.numNodes{note}, via plugin {plugin}", "trainjob",
                  ("spec", "trainer", "numNodes"))


@lru_cache(maxsize=256)
def _command_origin(how: str) -> Origin:
    return Origin(f"trainJob spec.trainer.command, {how}", "trainjob",
                  ("spec", "trainer", "command"))


_UPSERTS = {UpsertEnv: ("env", upsert.upsert_env), UpsertPorts: ("ports", upsert.upsert_ports),
            UpsertMounts: ("volumeMounts", upsert.upsert_mounts)}


def _container(ps: PodSet, name: str, init: bool) -> dict[str, Any]:
    container = ps.container(name, init=init)
    if container is None:
        raise CompileError(error(
            "TJC-CONTAINER-MISSING",
            f"container {name!r} not found in replicatedJob {ps.name!r}",
            subject="runtime"))
    return container
