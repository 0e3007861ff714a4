"""Warnings for inputs that hit an upstream quirk (reference §8): what the cluster accepts
but does not do what the user would expect.

`check(trainjob, runtime)` takes a TrainJob and the runtime it references, both after
`compiler.kube.structural.sanitize` and `compiler.kube.defaults.default_in_place`, and returns
warnings, each with a stable `TJC-QUIRK-*` id, a message saying what upstream does and what to do,
and a path into the TrainJob (subject `trainjob`) or the runtime (subject `runtime`). Called by
`compiler.validate.documents` after the webhook rules. Pure: no errors (the compile emulates every
quirk), never mutates its arguments, reads nothing.

The rules here concern every framework; they learn what a framework injects and what counting
no GPUs changes for it from the registry (`PluginSpec.trainer_envs`, `gpu_effect`). A
framework's own quirks (`PluginSpec.quirks`) live in its plugin module and run after these.
This module imports no plugin module, only the registry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.common.diagnostics import Diagnostic, Path, Severity
from compiler.common.jsondata import Obj, get_path
from compiler.core.context import ANCESTOR_LABEL, NODE, TRAINER
from compiler.core.plugins import REGISTRY
from compiler.core.plugins.base import TRAINER_PORT, PluginSpec
from compiler.core.plugins.checks import names_text
from compiler.core.resources import gpu_count

RUNTIME_JOBS: Path = ("spec", "template", "spec", "replicatedJobs")
POD_SPEC: Path = ("template", "spec", "template", "spec")
RESOURCES_PER_NODE: Path = ("spec", "trainer", "resourcesPerNode")


def check(trainjob: Obj, runtime: Obj) -> list[Diagnostic]:
    """Every quirk warning for one TrainJob and its runtime."""
    found: list[Diagnostic] = []
    for rule in _RULES:
        found.extend(rule(trainjob, runtime))
    for plugin in REGISTRY:
        if plugin.quirks is not None:
            found.extend(plugin.quirks(trainjob, runtime))
    return found


def _warning(rule: str, message: str, path: Path, subject: str = "trainjob") -> Diagnostic:
    return Diagnostic(Severity.WARNING, rule, message, path, subject=subject)


# ----------------------------------------------------------------------------- rules


def _no_trainer(trainjob: Obj, runtime: Obj) -> Iterator[Diagnostic]:
    """§8-B2: without spec.trainer, torch/jax/xgboost inject no env and no port."""
    if _trainer(trainjob) is not None or _trainer_container(runtime) is None:
        return
    for plugin in _frameworks(runtime):
        if plugin.trainer_envs:
            yield _warning(
                "TJC-QUIRK-NO-TRAINER",
                f"the TrainJob has no spec.trainer, so upstream's {plugin.ml_source} plugin "
                f"injects none of {names_text(plugin.trainer_envs)}{plugin.trainer_envs_note} "
                f"and no port {TRAINER_PORT} into the node container; add `trainer: {{}}` to "
                "spec to get them", ("spec",))


def _gpu_ignored(trainjob: Obj, runtime: Obj) -> Iterator[Diagnostic]:
    """§8-B4: GPU counts come from resourcesPerNode alone when it is set."""
    trainer = _trainer(trainjob)
    resources = (trainer or {}).get("resourcesPerNode")
    if trainer is None or not isinstance(resources, dict) or gpu_count(resources) > 0:
        return
    base = _runtime_node_resources(runtime)
    gpus = gpu_count(base)
    if gpus == 0:
        return
    effect = _gpu_effect(trainer, _dict(get_path(runtime, "spec", "mlPolicy")), gpus)
    if effect is None:
        return
    name = _gpu_name(base)
    yield _warning(
        "TJC-QUIRK-GPU-IGNORED",
        f"resourcesPerNode sets no GPU, so upstream counts GPUs from it alone (0) and ignores "
        f"the runtime's {name} ({gpus} per node; the pods still get them): {effect}; add "
        f"{name} to resourcesPerNode to keep the GPU count", RESOURCES_PER_NODE)


def _gpu_effect(trainer: Obj, ml_policy: Obj, gpus: int) -> str | None:
    """What a GPU count of 0 instead of `gpus` changes: the first framework of the runtime
    that says (None: nothing)."""
    for plugin in REGISTRY:
        policy = ml_policy.get(plugin.ml_source) if plugin.ml_source else None
        if isinstance(policy, dict) and plugin.gpu_effect is not None:
            return plugin.gpu_effect(trainer, policy, gpus)
    return None


def _zero_nodes(trainjob: Obj, runtime: Obj) -> Iterator[Diagnostic]:
    """§8-B7: numNodes 0 passes the CRD and gives a job with no pods."""
    trainer = _trainer(trainjob)
    if trainer is None or trainer.get("numNodes") != 0 or isinstance(trainer["numNodes"], bool):
        return
    mpi = get_path(runtime, "spec", "mlPolicy", "mpi")
    if isinstance(mpi, dict) and mpi.get("runLauncherAsNode") is True:
        return  # upstream gives the node job max(numNodes-1, 1) pods
    yield _warning(
        "TJC-QUIRK-ZERO-NODES",
        "numNodes is 0: the CRD accepts it and upstream gives the node job parallelism and "
        "completions 0, so no training pod runs (torch also sets PET_NNODES=0); set numNodes "
        "to 1 or more", ("spec", "trainer", "numNodes"))


def _two_gang_schedulers(trainjob: Obj, runtime: Obj) -> Iterator[Diagnostic]:
    """§8-B11: nothing stops coscheduling and volcano from being set together."""
    policy = _dict(get_path(runtime, "spec", "podGroupPolicy"))
    if isinstance(policy.get("coscheduling"), dict) and isinstance(policy.get("volcano"), dict):
        yield _warning(
            "TJC-QUIRK-TWO-GANG-SCHEDULERS",
            "podGroupPolicy sets both coscheduling and volcano: upstream has no check and "
            "applies both, creating two PodGroups and labelling the pods for both schedulers; "
            "keep only one", ("spec", "podGroupPolicy"), "runtime")


def _port_replaced(trainjob: Obj, runtime: Obj) -> Iterator[Diagnostic]:
    """§8-B8: the trainer port upsert matches any unnamed port."""
    if _trainer(trainjob) is None or not any(p.trainer_envs for p in _frameworks(runtime)):
        return
    found = _trainer_container(runtime)
    if found is None:
        return
    path, container = found
    for k, port in enumerate(_list(container.get("ports"))):
        if port.get("containerPort") == TRAINER_PORT:
            return
        if not port.get("name"):
            yield _warning(
                "TJC-QUIRK-PORT-REPLACED",
                f"this unnamed port {port.get('containerPort')} is replaced by the trainer "
                f"port {TRAINER_PORT}: upstream's port upsert treats two unnamed ports as the "
                "same port; give this port a name to keep it", (*path, "ports", k), "runtime")
            return


def _resources_ignored(trainjob: Obj, runtime: Obj) -> Iterator[Diagnostic]:
    """§8-B5: resourcesPerNode is merged only into runtimes with an mlPolicy."""
    trainer = _trainer(trainjob)
    if trainer is None or not isinstance(trainer.get("resourcesPerNode"), dict):
        return
    if isinstance(get_path(runtime, "spec", "mlPolicy"), dict):
        return
    yield _warning(
        "TJC-QUIRK-RESOURCES-IGNORED",
        "resourcesPerNode is ignored because the runtime has no mlPolicy: upstream merges it "
        "only into the trainer job of a runtime with an mlPolicy; set the resources in the "
        "runtime, or add an mlPolicy (e.g. `mlPolicy: {numNodes: 1}`) to it",
        RESOURCES_PER_NODE)


_RULES = (_no_trainer, _gpu_ignored, _zero_nodes, _two_gang_schedulers, _port_replaced,
          _resources_ignored)


# ----------------------------------------------------------------------------- runtime facts


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
