"""What a plugin is: a declaration, an activation test, phase functions that return edits, and
the hooks it implements.

A plugin module (or package, when large) defines one `PLUGIN = PluginSpec(...)` and carries
everything about its framework. Its `enforce` and `build` functions read the `Context` and
return a `PluginResult`: edits (applied by `compiler.core.plugins.edits` with upstream's upsert
rules), extra objects, and diagnostics. Plugins never mutate the context themselves. The facts
in `requires`/`provides`/`after` order the plugins (`compiler.core.plugins.graph`). Everything
else the applications ask of a framework (admission rules, quirk warnings, what it injects,
launcher knowledge for `tjc run --local`) is a one-method hook (`compiler.core.plugins.hooks`)
listed in `hooks`, found through the registry by `compiler.core.webhook`, `compiler.validate`,
`tjc run` and `tjc runtimes`, which import no plugin module themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any

from compiler.common.diagnostics import Diagnostic
from compiler.common.jsondata import Obj
from compiler.common.records import dataclass
from compiler.core.context import NODE, TRAINER, Context, PodSet


@dataclass(frozen=True)
class SetCount:
    """Set the pod count of a pod set (upstream `PodSet.Count`) from `spec.trainer.numNodes`;
    `note` says how, when the count is not numNodes itself (MPI's launcher as a node)."""

    pod_set: int
    count: int
    note: str = ""


@dataclass(frozen=True)
class UpsertEnv:
    """Upsert env vars by name into a container of a pod set."""

    pod_set: int
    container: str
    items: tuple[Obj, ...]
    init: bool = False


@dataclass(frozen=True)
class UpsertPorts:
    """Upsert ports by containerPort or name into a container of a pod set."""

    pod_set: int
    container: str
    items: tuple[Obj, ...]
    init: bool = False


@dataclass(frozen=True)
class UpsertMounts:
    """Upsert volume mounts by mountPath into a container of a pod set."""

    pod_set: int
    container: str
    items: tuple[Obj, ...]
    init: bool = False


@dataclass(frozen=True)
class UpsertVolumes:
    """Upsert volumes by name into the pod spec of a pod set."""

    pod_set: int
    items: tuple[Obj, ...]


@dataclass(frozen=True)
class SetPodMetadata:
    """Add scheduler labels or annotations to every pod template (`kind` labels|annotations)."""

    kind: str
    items: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SetFact:
    """Record a value later phases read, such as the MPI slots per node (upstream mutates the
    runtime's policy in memory for this)."""

    key: str
    value: Any


@dataclass(frozen=True)
class SetTrainerCommand:
    """Replace the in-memory `spec.trainer.command` the builder will write (torchtune, flux);
    `clear_args` also drops `spec.trainer.args` (flux: the runtime's args then stay); `how`
    says what the plugin did to the TrainJob's command (for `tjc explain`)."""

    command: tuple[str, ...]
    clear_args: bool = False
    how: str = "set by a plugin"


@dataclass(frozen=True)
class AddInitContainer:
    """Append an init container to a pod set (flux): the builder writes its name, image,
    command and volume mounts into a new slot after the runtime's own init containers."""

    pod_set: int
    container: Obj


Edit = SetCount | UpsertEnv | UpsertPorts | UpsertMounts | UpsertVolumes | SetPodMetadata \
    | SetTrainerCommand | SetFact | AddInitContainer


@dataclass(frozen=True)
class PluginResult:
    """What one plugin run produced."""

    edits: tuple[Edit, ...] = ()
    objects: tuple[Obj, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()


@dataclass(frozen=True, eq=False)
class PluginSpec:
    """A plugin's declaration: name, activation, facts, its phase functions and its hooks. Two
    are equal only when they are the same declaration.

    `active` decides from the runtime alone (its mlPolicy or podGroupPolicy): a prepared
    runtime asks once (`PreparedRuntime.plugins`).
    `enforce` runs in the first phase (upstream's EnforceMLPolicy / EnforcePodGroupPolicy) and
    returns edits; `build` runs once every plugin has enforced (upstream's component builders,
    after the pod counts are final) and returns objects. Both phases follow the graph order.
    `policy` names the runtime policy the plugin stands for (`mlPolicy.<key>`,
    `podGroupPolicy.<key>`, or words for the plugins that are not one policy's).
    `hooks` are the objects implementing the plugin's one-method hooks
    (`compiler.core.plugins.hooks`); a large plugin may take them from several modules.
    """

    name: str
    active: Callable[[Context], bool]
    enforce: Callable[[Context], PluginResult] | None = None
    build: Callable[[Context], PluginResult] | None = None
    requires: frozenset[str] = field(default_factory=frozenset)
    provides: frozenset[str] = field(default_factory=frozenset)
    after: frozenset[str] = field(default_factory=frozenset)
    policy: str = ""
    hooks: tuple[object, ...] = ()

    @property
    def ml_source(self) -> str:
        """The `mlPolicy` key the plugin stands for (`tjc runtimes` lists runtimes by it, the
        quirk hooks get its policy), or "" when `policy` is not `mlPolicy.<key>`."""
        head, dot, key = self.policy.partition(".")
        return key if head == "mlPolicy" and dot and key.isidentifier() else ""


def pod_group_policy(ctx: Context, key: str) -> Obj | None:
    """The runtime's `podGroupPolicy.<key>` (coscheduling, volcano), or None."""
    policy = (ctx.pod_group_policy or {}).get(key)
    return policy if isinstance(policy, dict) else None


def ml_policy_has(ctx: Context, key: str) -> bool:
    """True when the runtime's mlPolicy sets `key` (torch, mpi, jax, xgboost, flux)."""
    return ctx.ml_policy is not None and ctx.ml_policy.get(key) is not None


COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
TRAINER_PORT = 29500


def trainer_count(ctx: Context) -> tuple[PodSet | None, int, list[Edit]]:
    """The trainer pod set, its count once `trainer.numNodes` applies, and the edit that sets
    it (the first step of every ML-policy plugin but MPI)."""
    ps = ctx.pod_set_by_ancestor(TRAINER)
    trainer = ctx.trainer
    if ps is None:
        return None, 1, []
    if trainer is not None and isinstance(trainer.get("numNodes"), int):
        return ps, trainer["numNodes"], [SetCount(ps.index, trainer["numNodes"])]
    return ps, ps.count, []


def trainer_env_and_port(ctx: Context, envs: Callable[[int], tuple[Obj, ...]]) -> PluginResult:
    """The trainer count from numNodes; then, only when the TrainJob has `spec.trainer` and
    the trainer pod set has a `node` container, `envs(count)` and port 29500 upserted into it
    (the shape JAX and XGBoost share)."""
    ps, count, edits = trainer_count(ctx)
    if ctx.trainer is None or ps is None or ps.container(NODE) is None:
        return PluginResult(edits=tuple(edits))
    edits.append(UpsertEnv(ps.index, NODE, envs(count)))
    edits.append(UpsertPorts(ps.index, NODE, ({"containerPort": TRAINER_PORT},)))
    return PluginResult(edits=tuple(edits))


def completion_index_env(name: str) -> Obj:
    """An env var whose value is the pod's job completion index."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX}}}


def node_zero_host(ctx: Context) -> str:
    """`<tj>-node-0-0.<tj>`: upstream hardcodes job `node` and subdomain = TrainJob name."""
    return f"{ctx.name}-node-0-0.{ctx.name}"


def controller_reference(name: str, uid: str) -> Obj:
    """The controller ownerReference to a TrainJob, as upstream sets it on what it creates."""
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": name,
            "uid": uid, "controller": True, "blockOwnerDeletion": True}


def owner_references(ctx: Context) -> list[Obj]:
    """The controller ownerReference to the TrainJob, or none when it has no uid."""
    uid = ctx.trainjob.get("metadata", {}).get("uid")
    return [controller_reference(ctx.name, uid)] if uid else []


def owned_object(ctx: Context, api_version: str, kind: str, name: str, **fields: Any) -> Obj:
    """An object the TrainJob owns: apiVersion, kind, metadata (`object_metadata`), fields."""
    return {"apiVersion": api_version, "kind": kind, "metadata": object_metadata(ctx, name),
            **fields}


def object_metadata(ctx: Context, name: str) -> Obj:
    """Metadata of an object owned by the TrainJob: name, namespace, ownerReferences."""
    meta: Obj = {"name": name}
    if ctx.namespace:
        meta["namespace"] = ctx.namespace
    owners = owner_references(ctx)
    if owners:
        meta["ownerReferences"] = owners
    return meta
