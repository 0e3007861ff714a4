"""Warnings for inputs that hit an upstream quirk (reference §8): what the cluster accepts
but does not do what the user would expect.

`check(trainjob, runtime)` takes a TrainJob and the runtime it references, both after
`compiler.kube.structural.sanitize` and `compiler.kube.defaults.default_in_place`, and returns
warnings, each with a stable `TJC-QUIRK-*` id, a message saying what upstream does and what to do,
and a path into the TrainJob (subject `trainjob`) or the runtime (subject `runtime`). Called by
`compiler.validate.documents` after the webhook rules. Pure: no errors (the compile emulates every
quirk), never mutates its arguments, reads nothing.

What the rules need of a runtime (its frameworks, trainer container, GPUs, gang schedulers) is
worked out once per runtime object and remembered (`_facts`): callers check many TrainJobs
against one runtime and never change it in between.

The rules here concern every framework; they learn what a framework injects and what counting
no GPUs changes for it from the registry (`PluginSpec.trainer_envs`, `gpu_effect`). A
framework's own quirks (`PluginSpec.quirks`) live in its plugin module and run after these.
This module imports no plugin module, only the registry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from compiler.common.diagnostics import Diagnostic, Path, Severity
from compiler.common.jsondata import Obj, get_path
from compiler.common.perobject import per_object
from compiler.core.context import ANCESTOR_LABEL, NODE, TRAINER
from compiler.core.plugins import REGISTRY
from compiler.core.plugins.base import TRAINER_PORT, PluginSpec
from compiler.core.plugins.checks import names_text
from compiler.core.resources import gpu_count

RUNTIME_JOBS: Path = ("spec", "template", "spec", "replicatedJobs")
POD_SPEC: Path = ("template", "spec", "template", "spec")
RESOURCES_PER_NODE: Path = ("spec", "trainer", "resourcesPerNode")
_PLUGIN_QUIRKS: tuple[Callable[[Obj, Obj], Iterable[Diagnostic]], ...] = tuple(
    p.quirks for p in REGISTRY if p.quirks is not None)


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
    for quirks in _PLUGIN_QUIRKS:
        found.extend(quirks(trainjob, runtime))
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
    if facts.launcher_as_node:
        return None  # upstream gives the node job max(numNodes-1, 1) pods
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
    """§8-B11: nothing stops coscheduling and volcano from being set together."""
    if not facts.two_gang_schedulers:
        return None
    return _warning(
        "TJC-QUIRK-TWO-GANG-SCHEDULERS",
        "podGroupPolicy sets both coscheduling and volcano: upstream has no check and "
        "applies both, creating two PodGroups and labelling the pods for both schedulers; "
        "keep only one", ("spec", "podGroupPolicy"), "runtime")


# ----------------------------------------------------------------------------- runtime facts


GpuEffect = Callable[[Obj, Obj, int], "str | None"]


class _Facts:
    """What the rules need to know of one runtime; the same for every TrainJob that uses it.
    The GPU facts are worked out when a rule first needs them."""

    def __init__(self, runtime: Obj) -> None:
        self.ml_policy = _dict(get_path(runtime, "spec", "mlPolicy"))
        self.has_ml_policy = isinstance(get_path(runtime, "spec", "mlPolicy"), dict)
        envs = [p for p in _frameworks(runtime) if p.trainer_envs]
        found = _trainer_container(runtime)
        self.no_trainer = tuple(_no_trainer_message(p) for p in envs) if found is not None else ()
        self.unnamed_port = _unnamed_port(found) if envs else None
        mpi = self.ml_policy.get("mpi")
        self.launcher_as_node = isinstance(mpi, dict) and mpi.get("runLauncherAsNode") is True
        policy = _dict(get_path(runtime, "spec", "podGroupPolicy"))
        self.two_gang_schedulers = isinstance(policy.get("coscheduling"), dict) and \
            isinstance(policy.get("volcano"), dict)
        self.node_resources = _runtime_node_resources(runtime)

    @functools.cached_property
    def gpus(self) -> int:
        """GPUs per node of the runtime's trainer container."""
        return gpu_count(self.node_resources)

    @functools.cached_property
    def gpu_effect(self) -> tuple[GpuEffect, Obj] | None:
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


def _no_trainer_message(plugin: PluginSpec) -> str:
    """§8-B2: without spec.trainer, torch/jax/xgboost inject no env and no port."""
    return (f"the TrainJob has no spec.trainer, so upstream's {plugin.ml_source} plugin "
            f"injects none of {names_text(plugin.trainer_envs)}{plugin.trainer_envs_note} "
            f"and no port {TRAINER_PORT} into the node container; add `trainer: {{}}` to "
            "spec to get them")


def _gpu_effect(ml_policy: Obj) -> tuple[GpuEffect, Obj] | None:
    """The first framework of the runtime that says what a GPU count of 0 instead of the
    runtime's changes, with its policy (None: nothing changes)."""
    for plugin in REGISTRY:
        policy = ml_policy.get(plugin.ml_source) if plugin.ml_source else None
        if isinstance(policy, dict) and plugin.gpu_effect is not None:
            return plugin.gpu_effect, policy
    return None


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


def _frameworks(runtime: Obj) -> list[PluginSpec]:
    """The plugins of the mlPolicy frameworks the runtime sets, in registry order."""
    policy = _dict(get_path(runtime, "spec", "mlPolicy"))
    return [p for p in REGISTRY if p.ml_source and isinstance(policy.get(p.ml_source), dict)]


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
