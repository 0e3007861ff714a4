"""Apply plugin edits to the context with upstream's upsert rules.

Called by `compiler.core.compile` after each plugin phase, so the next plugin sees the result.
Each write is recorded with the plugin's name in the context's origin recorder
(`compiler.core.provenance`), with whether it changed anything. Pure (mutates only the context
it is given, which the compile owns).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from compiler.common.diagnostics import Path, error
from compiler.common.errors import CompileError
from compiler.common.jsondata import Obj, fast_copy
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
from compiler.core.provenance import Origin, Write, made


def apply_edit(ctx: Context, edit: Edit, plugin: str = "") -> None:
    """Apply one edit to the context (list items are copied: edits stay the plugin's) and
    record what it wrote as `plugin`'s."""
    if isinstance(edit, SetCount):
        ctx.pod_sets[edit.pod_set].count = edit.count
        ctx.pod_sets[edit.pod_set].count_origin = _count_origin(edit.note, plugin)
    elif isinstance(edit, (UpsertEnv, UpsertPorts, UpsertMounts)):
        field, apply = _UPSERTS[type(edit)]
        ps = ctx.pod_sets[edit.pod_set]
        container = _container(ps, edit.container, edit.init)
        before = list(container.get(field) or ())
        landed = apply(container, fast_copy(list(edit.items)))
        _list_write(ctx, ps, container, ("initContainers" if edit.init else "containers", field),
                    before, landed, f"plugin {plugin}")
    elif isinstance(edit, UpsertVolumes):
        ps = ctx.pod_sets[edit.pod_set]
        before = list(ps.pod_spec.get("volumes") or ())
        landed = upsert.upsert_volumes(ps.pod_spec, fast_copy(list(edit.items)))
        _list_write(ctx, ps, None, ("volumes",), before, landed, f"plugin {plugin}")
    elif isinstance(edit, SetPodMetadata):
        target = ctx.pod_labels if edit.kind == "labels" else ctx.pod_annotations
        target.update(dict(edit.items))
        by = made(f"plugin {plugin}")
        ctx.pod_meta_origins.update({(edit.kind, key): by for key, _ in edit.items})
    elif isinstance(edit, SetTrainerCommand):
        ctx.trainer_command = list(edit.command)
        ctx.clear_trainer_args = ctx.clear_trainer_args or edit.clear_args
        ctx.command_origin = _command_origin(edit.how) if "command" in (ctx.trainer or {}) \
            else made(f"plugin {plugin}")
    elif isinstance(edit, AddInitContainer):
        ps = ctx.pod_sets[edit.pod_set]
        inits = ps.pod_spec.setdefault("initContainers", [])
        inits.append(fast_copy(edit.container))
        _list_write(ctx, ps, None, ("initContainers",), [], [len(inits) - 1],
                    f"plugin {plugin} (init container it adds)")
    elif isinstance(edit, SetFact):
        ctx.facts[edit.key] = edit.value


def _list_write(ctx: Context, ps: PodSet, container: Obj | None, path: tuple[str, ...],
                before: list[Any], landed: list[int], who: str) -> None:
    """Record items written into a list of a pod spec (`container` None) or of a container:
    `path` is the list's below it, `before` its items before the write (the upserts replace
    items, never change one in place, so a shallow copy keeps them). What is recorded is
    worked out only when looked up."""
    if not landed:
        return
    after = list((ps.pod_spec if container is None else container)[path[-1]])
    root, index, pod_spec = ctx.root, ps.index, ps.pod_spec
    ctx.origins.defer(lambda: _list_writes(
        (*root, "spec", "replicatedJobs", index, *POD_SPEC, *path) if container is None
        else (*root, "spec", "replicatedJobs", index, *POD_SPEC, path[0],
              _index(pod_spec[path[0]], container), *path[1:]),
        before, after, landed, made(who)))


def _list_writes(at: Path, before: list[Any], after: list[Any], landed: list[int],
                 by: Origin) -> Iterator[Write]:
    """Each landed item of a list write, and whether it replaced an equal one."""
    for i in landed:
        yield (*at, i), by, i >= len(before) or before[i] != after[i]


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


def _index(items: list[Obj], item: Obj) -> int:
    """The position of this very item (computed only when recording)."""
    return next(i for i, cur in enumerate(items) if cur is item)


def _container(ps: PodSet, name: str, init: bool) -> dict[str, Any]:
    container = ps.container(name, init=init)
    if container is None:
        raise CompileError(error(
            "TJC-CONTAINER-MISSING",
            f"container {name!r} not found in replicatedJob {ps.name!r}",
            subject="runtime"))
    return container
