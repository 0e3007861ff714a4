"""Apply plugin edits to the context with upstream's upsert rules.

Called by `compiler.core.compile` after each plugin phase, so the next plugin sees the result. Each
write is recorded with the plugin's name in the context's origin recorder
(`compiler.core.provenance`). Pure (mutates only the context it is given, which the compile owns).
"""

from __future__ import annotations

from typing import Any

from compiler.common.diagnostics import error
from compiler.common.errors import CompileError
from compiler.common.jsondata import Obj, fast_copy
from compiler.core import upsert
from compiler.core.context import Context, PodSet
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
from compiler.core.provenance import Origin

# a list write: the pod set, the container written into (None: the pod spec), the path of the
# list below it, and the indices the items landed at
Written = tuple[PodSet, Obj | None, tuple[str, ...], list[int]]


def apply_edit(ctx: Context, edit: Edit, plugin: str = "") -> None:
    """Apply one edit to the context (list items are copied: edits stay the plugin's) and,
    when the compile records provenance, record what it wrote as `plugin`'s."""
    written: Written | None = None
    if isinstance(edit, SetCount):
        ctx.pod_sets[edit.pod_set].count = edit.count
    elif isinstance(edit, (UpsertEnv, UpsertPorts, UpsertMounts)):
        field, apply = _UPSERTS[type(edit)]
        ps = ctx.pod_sets[edit.pod_set]
        container = _container(ps, edit.container, edit.init)
        landed = apply(container, fast_copy(list(edit.items)))
        written = ps, container, ("initContainers" if edit.init else "containers", field), landed
    elif isinstance(edit, UpsertVolumes):
        ps = ctx.pod_sets[edit.pod_set]
        landed = upsert.upsert_volumes(ps.pod_spec, fast_copy(list(edit.items)))
        written = ps, None, ("volumes",), landed
    elif isinstance(edit, SetPodMetadata):
        target = ctx.pod_labels if edit.kind == "labels" else ctx.pod_annotations
        target.update(dict(edit.items))
    elif isinstance(edit, SetTrainerCommand):
        ctx.trainer_command = list(edit.command)
        ctx.clear_trainer_args = ctx.clear_trainer_args or edit.clear_args
    elif isinstance(edit, AddInitContainer):
        ps = ctx.pod_sets[edit.pod_set]
        inits = ps.pod_spec.setdefault("initContainers", [])
        inits.append(fast_copy(edit.container))
        written = ps, None, ("initContainers",), [len(inits) - 1]
    elif isinstance(edit, SetFact):
        ctx.facts[edit.key] = edit.value
    if ctx.origins.enabled:
        _record(ctx, edit, plugin, written)


def _record(ctx: Context, edit: Edit, plugin: str, written: Written | None) -> None:
    """The origins of what the edit wrote: list items where they landed, and the count, pod
    metadata and command the JobSet builder writes later."""
    made = Origin(f"plugin {plugin}")
    if isinstance(edit, AddInitContainer):
        made = Origin(f"plugin {plugin} (init container it adds)")
    if written is not None:
        ps, container, path, landed = written
        at = ctx.pod_path(ps, *path) if container is None else \
            ctx.pod_path(ps, path[0], _index(ps.pod_spec[path[0]], container), *path[1:])
        ctx.origins.record_items(at, landed, [made] * len(landed))
    elif isinstance(edit, SetCount):
        ctx.pod_sets[edit.pod_set].count_origin = Origin(
            f"trainJob spec.trainer.numNodes{edit.note}, via plugin {plugin}", "trainjob",
            ("spec", "trainer", "numNodes"))
    elif isinstance(edit, SetPodMetadata):
        ctx.pod_meta_origins.update({(edit.kind, key): made for key, _ in edit.items})
    elif isinstance(edit, SetTrainerCommand):
        ctx.command_origin = Origin(f"trainJob spec.trainer.command, {edit.how}", "trainjob",
                                    ("spec", "trainer", "command")) \
            if "command" in (ctx.trainer or {}) else made


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
