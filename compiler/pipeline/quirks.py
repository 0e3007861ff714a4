"""Warnings for inputs that hit an upstream quirk (reference §8): what the cluster accepts
but does not do what the user would expect.

`check(trainjob, runtime)` takes a TrainJob and the runtime it references, both after
`compiler.kube.structural.sanitize` and `compiler.kube.defaults.default_in_place`, and returns
warnings, each with a stable `TJC-QUIRK-*` id, a message saying what upstream does and what to do,
and a path into the TrainJob (subject `trainjob`) or the runtime (subject `runtime`). Called by
the pipeline (`compiler.pipeline.session`) after the webhook rules. Pure: no errors (the
compile emulates every quirk), never mutates its arguments, reads nothing.

What the rules need of a runtime (its frameworks, trainer container, GPUs, gang schedulers) is
worked out once per runtime object and remembered (`_facts`): callers check many TrainJobs
against one runtime and never change it in between.

The rules here concern every framework; they learn what a framework injects, what counting no
GPUs changes for it and how it counts the node job's pods from its plugin's hooks
(`compiler.core.plugins.hooks`: `TrainerEnvs`, `GpuEffect`, `NodeCount`), asked only for the
frameworks the runtime's mlPolicy sets; which plugins are gang schedulers, from their
`podGroupPolicy.<key>` declarations. A framework's own quirks (its `Quirks` hook) live in its
plugin module and run after these. This module imports no plugin module, only the registry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from compiler.common.diagnostics import Diagnostic, Path, Severity
from compiler.common.jsondata import Obj, get_path
from compiler.common.perobject import per_object
from compiler.core.context import ANCESTOR_LABEL, NODE, TRAINER
from compiler.core.plugins import hooked, registry
from compiler.core.plugins.base import TRAINER_PORT, PluginSpec
from compiler.core.plugins.checks import names_text
from compiler.core.plugins.hooks import GpuEffect, InjectedEnvs, NodeCount, Quirks, TrainerEnvs
from compiler.core.resources import gpu_count

RUNTIME_JOBS: Path = ("spec", "template", "spec", "replicatedJobs")
POD_SPEC: Path = ("template", "spec", "template", "spec")
RESOURCES_PER_NODE: Path = ("spec", "trainer", "resourcesPerNode")


def check(trainjob: Obj, runtime: Obj) -> list[Diagnostic]:
    """Every quirk warning for one TrainJob and its runtime."""
    facts = _facts(runtime)
    trainer = _trainer(trainjob)
    if trainer is None:
        found = [_warning("TJC-QUIRK-NO-TRAINER", message, ("spec",))
                 for message in facts.no_trainer]
        hits: tuple[Diagnostic | None, ...] = (_two_gang_schedulers(facts),)
    else:
        found = []
        hits = (_gpu_ignored(trainer, facts), _zero_nodes(trainer, facts),
                _two_gang_schedulers(facts), _port_replaced(facts),
                _resources_ignored(trainer, facts))
    found += [hit for hit in hits if hit is not None]
    for _, hook in hooked(Quirks):
        found.extend(hook.quirks(trainjob, runtime))
    return found


def _warning(rule: str, message: str, path: Path, subject: str = "trainjob") -> Diagnostic:
    return Diagnostic(Severity.WARNING, rule, message, path, subject=subject)


# ----------------------------------------------------------------------------- rules


def _gpu_ignored(trainer: Obj, facts: _Facts) -> Diagnostic | None:
    """§8-B4: GPU counts come from resourcesPerNode alone when it is set."""
    resources = trainer.get("resourcesPerNode")
    if not isinstance(resources, dict) or facts.gpus == 0 or facts.gpu_effect is None:
        return None  # the runtime's facts first: most runtimes have no GPU to ignore
    if gpu_count(resources) > 0:
        return None
    gpu_effect, policy = facts.gpu_effect
    effect = gpu_effect(trainer, policy, facts.gpus)
    if effect is None:
        return None
    name, gpus = facts.gpu_name, facts.gpus
    return _warning(
        "TJC-QUIRK-GPU-IGNORED",
        f"resourcesPerNode sets no GPU, so upstream counts GPUs from it alone (0) and ignores "
        f"the runtime's {name} ({gpus} per node; the pods still get them): {effect}; add "
        f"{name} to resourcesPerNode to keep the GPU count", RESOURCES_PER_NODE)


def _zero_nodes(trainer: Obj, facts: _Facts) -> Diagnostic | None:
    """§8-B7: numNodes 0 passes the CRD and gives a job with no pods."""
    if trainer.get("numNodes") != 0 or isinstance(trainer["numNodes"], bool):
        return None
    if facts.pods_at_zero_nodes:
        return None  # e.g. MPI's launcher as a node: upstream gives the node job max(0-1, 1)
    return _warning(
        "TJC-QUIRK-ZERO-NODES",
        "numNodes is 0: the CRD accepts it and upstream gives the node job parallelism and "
        "completions 0, so no training pod runs (torch also sets PET_NNODES=0); set numNodes "
        "to 1 or more", ("spec", "trainer", "numNodes"))


def _port_replaced(facts: _Facts) -> Diagnostic | None:
    """§8-B8: the trainer port upsert matches any unnamed port."""
    if facts.unnamed_port is None:
        return None
    path, port = facts.unnamed_port
    return _warning(
        "TJC-QUIRK-PORT-REPLACED",
        f"this unnamed port {port} is replaced by the trainer port {TRAINER_PORT}: upstream's "
        "port upsert treats two unnamed ports as the same port; give this port a name to keep "
        "it", path, "runtime")


def _resources_ignored(trainer: Obj, facts: _Facts) -> Diagnostic | None:
    """§8-B5: resourcesPerNode is merged only into runtimes with an mlPolicy."""
    if facts.has_ml_policy or not isinstance(trainer.get("resourcesPerNode"), dict):
        return None
    return _warning(
        "TJC-QUIRK-RESOURCES-IGNORED",
        "resourcesPerNode is ignored because the runtime has no mlPolicy: upstream merges it "
        "only into the trainer job of a runtime with an mlPolicy; set the resources in the "
        "runtime, or add an mlPolicy (e.g. `mlPolicy: {numNodes: 1}`) to it",
        RESOURCES_PER_NODE)


def _two_gang_schedulers(facts: _Facts) -> Diagnostic | None:
    """§8-B11: nothing stops two podGroupPolicy plugins (coscheduling and volcano) from being
    set together."""
    if len(facts.gang_schedulers) < 2:
        return None
    *first, last = facts.gang_schedulers
    return _warning(
        "TJC-QUIRK-TWO-GANG-SCHEDULERS",
        f"podGroupPolicy sets both {', '.join(first)} and {last}: upstream has no check and "
        "applies both, creating two PodGroups and labelling the pods for both schedulers; "
        "keep only one", ("spec", "podGroupPolicy"), "runtime")


# ----------------------------------------------------------------------------- runtime facts


class _Facts:
    """What the rules need to know of one runtime; the same for every TrainJob that uses it.
    The GPU facts are worked out when a rule first needs them."""

    def __init__(self, runtime: Obj) -> None:
        self.ml_policy = _dict(get_path(runtime, "spec", "mlPolicy"))
        self.has_ml_policy = isinstance(get_path(runtime, "spec", "mlPolicy"), dict)
        envs = _injected_envs(self.ml_policy)
        found = _trainer_container(runtime)
        self.no_trainer = tuple(_no_trainer_message(p, e) for p, e in envs) \
            if found is not None else ()
        self.unnamed_port = _unnamed_port(found) if envs else None
        self.pods_at_zero_nodes = any(hook.node_pods(policy, 0) > 0 for hook, policy in
                                      _of_frameworks(NodeCount, self.ml_policy))
        self.gang_schedulers = _gang_schedulers(
            _dict(get_path(runtime, "spec", "podGroupPolicy")))
        self.node_resources = _runtime_node_resources(runtime)

    @functools.cached_property
    def gpus(self) -> int:
        """GPUs per node of the runtime's trainer container."""
        return gpu_count(self.node_resources)

    @functools.cached_property
    def gpu_effect(self) -> tuple[Callable[[Obj, Obj, int], str | None], Obj] | None:
        """The first framework that says what counting no GPUs changes, with its policy."""
        return _gpu_effect(self.ml_policy)

    @functools.cached_property
    def gpu_name(self) -> str:
        """The resource name the runtime's GPU count comes from."""
        return _gpu_name(self.node_resources)


@per_object
def _facts(runtime: Obj) -> _Facts:
    """The runtime's facts, worked out once per runtime object (callers check many TrainJobs
    against one runtime and never change it)."""
    return _Facts(runtime)


def _no_trainer_message(plugin: PluginSpec, envs: InjectedEnvs) -> str:
    """§8-B2: without spec.trainer, torch/jax/xgboost inject no env and no port."""
    return (f"the TrainJob has no spec.trainer, so upstream's {plugin.ml_source} plugin "
            f"injects none of {names_text(envs.names)}{envs.note} "
            f"and no port {TRAINER_PORT} into the node container; add `trainer: {{}}` to "
            "spec to get them")


def _injected_envs(ml_policy: Obj) -> list[tuple[PluginSpec, InjectedEnvs]]:
    """The frameworks of the runtime that inject envs only with spec.trainer, with them."""
    found = [(plugin, hook.trainer_envs()) for plugin, hook in hooked(TrainerEnvs)
             if plugin.ml_source and isinstance(ml_policy.get(plugin.ml_source), dict)]
    return [(plugin, envs) for plugin, envs in found if envs.names]


def _gpu_effect(ml_policy: Obj) -> tuple[Callable[[Obj, Obj, int], str | None], Obj] | None:
    """The first framework of the runtime that says what a GPU count of 0 instead of the
    runtime's changes, with its policy (None: nothing changes)."""
    for hook, policy in _of_frameworks(GpuEffect, ml_policy):
        return hook.gpu_effect, policy
    return None


H = TypeVar("H")


def _of_frameworks(kind: Callable[..., H], ml_policy: Obj) -> list[tuple[H, Obj]]:
    """The `kind` hooks of the frameworks the runtime's mlPolicy sets, each with its policy,
    in registry order."""
    found = []
    for plugin, hook in hooked(kind):
        policy = ml_policy.get(plugin.ml_source) if plugin.ml_source else None
        if isinstance(policy, dict):
            found.append((hook, policy))
    return found


def _gang_schedulers(pod_group_policy: Obj) -> tuple[str, ...]:
    """The names of the podGroupPolicy plugins whose policy the runtime sets."""
    out = []
    for plugin in registry():
        head, _, key = plugin.policy.partition(".")
        if head == "podGroupPolicy" and isinstance(pod_group_policy.get(key), dict):
            out.append(plugin.name)
    return tuple(out)


def _unnamed_port(found: tuple[Path, Obj] | None) -> tuple[Path, Any] | None:
    """The first unnamed port of the trainer container before any port with the trainer
    port's number, with its path and number."""
    if found is None:
        return None
    path, container = found
    for k, port in enumerate(_list(container.get("ports"))):
        if port.get("containerPort") == TRAINER_PORT:
            return None
        if not port.get("name"):
            return (*path, "ports", k), port.get("containerPort")
    return None


def _trainer_container(runtime: Obj) -> tuple[Path, Obj] | None:
    """The first `node` container of the first trainer-ancestor job, with its path."""
    for i, rjob in enumerate(_list(get_path(runtime, *RUNTIME_JOBS))):
        if _dict(get_path(rjob, "template", "metadata", "labels")).get(ANCESTOR_LABEL) != TRAINER:
            continue
        for k, container in enumerate(_list(get_path(rjob, *POD_SPEC, "containers"))):
            if container.get("name") == NODE:
                return (*RUNTIME_JOBS, i, *POD_SPEC, "containers", k), container
        return None
    return None


def _runtime_node_resources(runtime: Obj) -> Obj:
    """`ExtractResourcePerNodeFromRuntime`: the first `node` container of the first job named
    `node` or of trainer ancestry (its resources are never nil after the typed round trip)."""
    for rjob in _list(get_path(runtime, *RUNTIME_JOBS)):
        labels = _dict(get_path(rjob, "template", "metadata", "labels"))
        if rjob.get("name") != NODE and labels.get(ANCESTOR_LABEL) != TRAINER:
            continue
        for container in _list(get_path(rjob, *POD_SPEC, "containers")):
            if container.get("name") == NODE:
                return _dict(container.get("resources"))
    return {}


def _gpu_name(resources: Obj) -> str:
    """The resource name the GPU count comes from (requests first, as `GetNumGPUPerNode`)."""
    for key in ("requests", "limits"):
        names = sorted(n for n in _dict(resources.get(key)) if "gpu" in n.lower())
        if names and gpu_count({key: resources[key]}) > 0:
            return names[0]
    return "gpu"


# ----------------------------------------------------------------------------- helpers


def _trainer(trainjob: Obj) -> Obj | None:
    trainer = get_path(trainjob, "spec", "trainer")
    return trainer if isinstance(trainer, dict) else None


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
