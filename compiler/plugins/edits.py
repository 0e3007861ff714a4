"""Apply plugin edits to the context with upstream's upsert rules.

Called by `compiler.compile` after each plugin phase, so the next plugin sees the result. Each
applied edit is recorded with the plugin's name for provenance. Pure (mutates only the context
it is given, which the compile owns).
"""

from __future__ import annotations

from typing import Any

from compiler import upsert
from compiler.context import Context, PodSet
from compiler.data import fast_copy
from compiler.diagnostics import error
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


def apply_edit(ctx: Context, edit: Edit) -> None:
    """Apply one edit to the context (list items are copied: edits stay the plugin's)."""
    if isinstance(edit, SetCount):
        ctx.pod_sets[edit.pod_set].count = edit.count
    elif isinstance(edit, UpsertEnv):
        upsert.upsert_env(_container(ctx.pod_sets[edit.pod_set], edit.container, edit.init),
                          fast_copy(list(edit.items)))
    elif isinstance(edit, UpsertPorts):
        upsert.upsert_ports(_container(ctx.pod_sets[edit.pod_set], edit.container, edit.init),
                            fast_copy(list(edit.items)))
    elif isinstance(edit, UpsertMounts):
        upsert.upsert_mounts(_container(ctx.pod_sets[edit.pod_set], edit.container, edit.init),
                             fast_copy(list(edit.items)))
    elif isinstance(edit, UpsertVolumes):
        upsert.upsert_volumes(ctx.pod_sets[edit.pod_set].pod_spec, fast_copy(list(edit.items)))
    elif isinstance(edit, SetPodMetadata):
        target = ctx.pod_labels if edit.kind == "labels" else ctx.pod_annotations
        target.update(dict(edit.items))
    elif isinstance(edit, SetTrainerCommand):
        ctx.trainer_command = list(edit.command)
        ctx.clear_trainer_args = ctx.clear_trainer_args or edit.clear_args
    elif isinstance(edit, AddInitContainer):
        pod_spec = ctx.pod_sets[edit.pod_set].pod_spec
        pod_spec.setdefault("initContainers", []).append(fast_copy(edit.container))
    elif isinstance(edit, SetFact):
        ctx.facts[edit.key] = edit.value


def _container(ps: PodSet, name: str, init: bool) -> dict[str, Any]:
    container = ps.container(name, init=init)
    if container is None:
        raise CompileError(error(
            "TJC-CONTAINER-MISSING",
            f"container {name!r} not found in replicatedJob {ps.name!r}",
            subject="runtime"))
    return container
