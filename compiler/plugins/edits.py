"""Apply plugin edits to the context with upstream's upsert rules.

Called by `compiler.compile` after each plugin phase, so the next plugin sees the result. Each
write is recorded with the plugin's name in the context's origin recorder
(`compiler.provenance`). Pure (mutates only the context it is given, which the compile owns).
"""

from __future__ import annotations

from typing import Any

from compiler import upsert
from compiler.context import Context, PodSet
from compiler.data import fast_copy
from compiler.diagnostics import Path, error
from compiler.errors import CompileError
from compiler.plugins.base import (
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
from compiler.provenance import Origin


def apply_edit(ctx: Context, edit: Edit, plugin: str = "") -> None:
    """Apply one edit to the context (list items are copied: edits stay the plugin's) and,
    when the compile records provenance, record what it wrote as `plugin`'s."""
    written = _apply(ctx, edit)
    if ctx.origins.enabled:
        _record(ctx, edit, plugin, written)


def _apply(ctx: Context, edit: Edit) -> tuple[Path, list[int]] | None:
    """Apply the edit; for a list write, the output path of the list and the indices the
    items landed at."""
    if isinstance(edit, SetCount):
        ctx.pod_sets[edit.pod_set].count = edit.count
    elif isinstance(edit, UpsertEnv | UpsertPorts | UpsertMounts):
        field, apply = _UPSERTS[type(edit)]
        ps = ctx.pod_sets[edit.pod_set]
        container = _container(ps, edit.container, edit.init)
        landed = apply(container, fast_copy(list(edit.items)))
        key = "initContainers" if edit.init else "containers"
        index = next(i for i, c in enumerate(ps.pod_spec[key]) if c is container)
        return ctx.pod_path(ps, key, index, field), landed
    elif isinstance(edit, UpsertVolumes):
        ps = ctx.pod_sets[edit.pod_set]
        landed = upsert.upsert_volumes(ps.pod_spec, fast_copy(list(edit.items)))
        return ctx.pod_path(ps, "volumes"), landed
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
        return ctx.pod_path(ps, "initContainers"), [len(inits) - 1]
    elif isinstance(edit, SetFact):
        ctx.facts[edit.key] = edit.value
    return None


def _record(ctx: Context, edit: Edit, plugin: str,
            written: tuple[Path, list[int]] | None) -> None:
    """The origins of what the edit wrote: list items where they landed, and the count, pod
    metadata and command the JobSet builder writes later."""
    made = Origin(f"plugin {plugin}")
    if isinstance(edit, AddInitContainer):
        made = Origin(f"plugin {plugin} (init container it adds)")
    if written is not None:
        ctx.origins.record_items(written[0], written[1], [made] * len(written[1]))
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


def _container(ps: PodSet, name: str, init: bool) -> dict[str, Any]:
    container = ps.container(name, init=init)
    if container is None:
        raise CompileError(error(
            "TJC-CONTAINER-MISSING",
            f"container {name!r} not found in replicatedJob {ps.name!r}",
            subject="runtime"))
    return container
