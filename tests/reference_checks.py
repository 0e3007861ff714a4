"""The implementations of `compiler.kube.podresources.validate`, `compiler.kube.objectmeta.validate`
and `compiler.pipeline.quirks.check` before they were made faster, kept as they were (the
memoisation dropped) so the tests can show the fast ones give the same diagnostics, in the same
order, on generated documents, the built-in runtimes and the benchmark corpus. What did not
change (patterns, messages, runtime facts, small helpers) is imported from the modules."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from compiler.common.diagnostics import Diagnostic, Path, error
from compiler.common.jsondata import Obj, get_path
from compiler.core.plugins import hooked
from compiler.core.plugins.base import TRAINER_PORT, PluginSpec
from compiler.core.plugins.checks import names_text
from compiler.core.plugins.hooks import GpuEffect, Quirks, TrainerEnvs
from compiler.core.resources import gpu_count
from compiler.kube.objectmeta import (
    _LABEL,
    _LABEL_MSG,
    _LABEL_VALUE,
    _QNAME,
    _QNAME_MSG,
    _SUBDOMAIN,
    _SUBDOMAIN_MSG,
    _VALUE_MSG,
    KINDS,
    META,
    TOTAL_ANNOTATION_SIZE,
    _invalid,
    _mask_trailing_dash,
    _size,
    max_len_error,
    regex_error,
)
from compiler.kube.podresources import _HOLDERS, _MAX_WALK, MILLI_OVERFLOW
from compiler.kube.quantity import QuantityError, parse
from compiler.pipeline.quirks import (
    _dict,
    _gpu_name,
    _list,
    _runtime_node_resources,
    _trainer,
    _trainer_container,
    _warning,
)

# ============================================================================ podresources

def _is_extended(name: str) -> bool:
    """`IsExtendedResourceName`: not native (no `/`, or a kubernetes.io domain), not a quota
    `requests.` name, and a qualified name once prefixed with `requests.`."""
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.") and \
        not is_qualified_name(f"requests.{name}")


def pod_validate(data: Any) -> list[Diagnostic]:
    """Every negative amount and every fractional extended-resource amount in a document."""
    out: list[Diagnostic] = []
    _walk(data, (), 0, out)
    return out


def _walk(value: Any, path: Path, depth: int, out: list[Diagnostic]) -> None:
    """Depth-first, in document order; only collections are entered (scalars hold nothing)."""
    if depth > _MAX_WALK:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict):
                if key in _HOLDERS:
                    out.extend(_amounts(item, (*path, key)))
                _walk(item, (*path, key), depth + 1, out)
            elif isinstance(item, list):
                _walk(item, (*path, key), depth + 1, out)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, (dict, list)):
                _walk(item, (*path, i), depth + 1, out)


def _amounts(holder: dict[str, Any], path: Path) -> Iterator[Diagnostic]:
    for group in ("requests", "limits"):
        amounts = holder.get(group)
        if not isinstance(amounts, dict):
            continue
        for name, amount in amounts.items():
            yield from _amount(name, amount, (*path, group, name))


def _amount(name: str, amount: Any, path: Path) -> Iterator[Diagnostic]:
    if isinstance(amount, bool) or not isinstance(amount, (str, int)):
        return
    problem = _problem(name, amount) if isinstance(name, str) else None
    if problem is not None:
        yield error(problem[0], problem[1], path, subject="pods")


def _problem(name: str, amount: str | int) -> tuple[str, str] | None:
    """(rule, message) of one amount of one resource, or None (the same pairs recur)."""
    try:
        value = parse(amount).value
    except QuantityError:
        return None
    if value < 0:
        return ("TJC-RESOURCE-NEGATIVE", f"{name} is {amount}: must be greater than or "
                "equal to 0; the Pods would be refused")
    if _is_extended(name) and value.denominator != 1:
        return ("TJC-RESOURCE-NOT-INTEGER", f"{name} is {amount}: an extended resource "
                "must be an integer; the Pods would be refused")
    if _is_extended(name) and abs(value) >= MILLI_OVERFLOW:
        return ("TJC-RESOURCE-NOT-INTEGER", f"{name} is {amount}: an extended resource must "
                "be below 2^63 thousandths (9223372036854775.807); beyond, the API server's "
                "integer check overflows and the Pods would be refused")
    return None


# ============================================================================ objectmeta

def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, flags=re.ASCII)


def _full(pattern: str, value: str) -> bool:
    return _compiled(pattern).fullmatch(value) is not None


def is_dns1123_subdomain(value: str) -> list[str]:
    """`IsDNS1123Subdomain`: the problems with `value` (none when it is one)."""
    errs = [max_len_error(253)] if _size(value) > 253 else []
    if not _full(_SUBDOMAIN, value):
        errs.append(regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN, "example.com"))
    return errs


def is_dns1123_label(value: str) -> list[str]:
    """`IsDNS1123Label`: the problems with `value`."""
    errs = [max_len_error(63)] if _size(value) > 63 else []
    if not _full(_LABEL, value):
        errs.append("must not contain dots" if _full(_SUBDOMAIN, value)
                    else regex_error(_LABEL_MSG, _LABEL, "my-name", "123-abc"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """`IsQualifiedName`: `[prefix/]name`, prefix a DNS-1123 subdomain, name at most 63."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) > 2:
        example = regex_error(_QNAME_MSG, _QNAME, "MyName", "my.name", "123-abc")
        return [f"a qualified name {example}"
                " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += [f"prefix part {msg}" for msg in is_dns1123_subdomain(prefix)]
    if not name:
        errs.append("name part must be non-empty")
    elif _size(name) > 63:
        errs.append(f"name part {max_len_error(63)}")
    if not _full(_QNAME, name):
        errs.append(f"name part {regex_error(_QNAME_MSG, _QNAME, 'MyName', 'my.name', '123-abc')}")
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """`IsValidLabelValue`: empty, or a qualified name part of at most 63."""
    errs = [max_len_error(63)] if _size(value) > 63 else []
    if not _full(_LABEL_VALUE, value):
        errs.append(regex_error(_VALUE_MSG, _LABEL_VALUE, "MyValue", "my_value", "12345"))
    return errs


def meta_validate(kind: str, data: dict[str, Any]) -> list[Diagnostic]:
    """Every ObjectMeta problem of one document of a kind tjc reads (others: none)."""
    meta = data.get("metadata")
    if kind not in KINDS or not isinstance(meta, dict):
        return []
    out: list[Diagnostic] = []
    name, generate = meta.get("name"), meta.get("generateName")
    if isinstance(generate, str) and generate:
        out += _invalid("TJC-META-GENERATE-NAME", (*META, "generateName"), generate,
                        is_dns1123_subdomain(_mask_trailing_dash(generate)))
    if not name:
        out.append(error("TJC-META-NAME", "name or generateName is required", (*META, "name")))
    elif isinstance(name, str):
        out += _invalid("TJC-META-NAME", (*META, "name"), name, is_dns1123_subdomain(name))
    namespace = meta.get("namespace")
    if KINDS[kind] and isinstance(namespace, str) and namespace:
        out += _invalid("TJC-META-NAMESPACE", (*META, "namespace"), namespace,
                        is_dns1123_label(namespace))
    out += _labels(meta.get("labels"))
    out += _annotations(meta.get("annotations"))
    out += _finalizers(meta.get("finalizers"))
    return out


def _labels(labels: Any) -> Iterator[Diagnostic]:
    if not isinstance(labels, dict):
        return
    for key, value in labels.items():
        path = (*META, "labels", key)
        yield from _invalid("TJC-META-LABEL-KEY", path, key, is_qualified_name(key))
        if isinstance(value, str):
            yield from _invalid("TJC-META-LABEL-VALUE", path, value, is_valid_label_value(value))


def _annotations(annotations: Any) -> Iterator[Diagnostic]:
    if not isinstance(annotations, dict):
        return
    total = 0
    for key, value in annotations.items():
        yield from _invalid("TJC-META-ANNOTATION-KEY", (*META, "annotations", key), key,
                            is_qualified_name(key.lower()))
        total += _size(key) + (_size(value) if isinstance(value, str) else 0)
    if total > TOTAL_ANNOTATION_SIZE:
        yield error("TJC-META-ANNOTATIONS-TOO-LONG", f"annotations take {total} bytes: may not be "
                    f"more than {TOTAL_ANNOTATION_SIZE} bytes", (*META, "annotations"))


def _finalizers(finalizers: Any) -> Iterator[Diagnostic]:
    if not isinstance(finalizers, list):
        return
    for i, value in enumerate(finalizers):
        if isinstance(value, str):
            yield from _invalid("TJC-META-FINALIZER", (*META, "finalizers", i), value,
                                is_qualified_name(value))


# ============================================================================ quirks

RESOURCES_PER_NODE: Path = ("spec", "trainer", "resourcesPerNode")


def quirks_check(trainjob: Obj, runtime: Obj) -> list[Diagnostic]:
    """Every quirk warning for one TrainJob and its runtime."""
    found: list[Diagnostic] = []
    for rule in _RULES:
        found.extend(rule(trainjob, runtime))
    for _, hook in hooked(Quirks):
        found.extend(hook.quirks(trainjob, runtime))
    return found


def _frameworks(runtime: Obj) -> list[tuple[PluginSpec, tuple[str, ...], str]]:
    """The mlPolicy frameworks the runtime sets that inject envs only with spec.trainer, with
    the names and the note, in registry order."""
    policy = _dict(get_path(runtime, "spec", "mlPolicy"))
    return [(plugin, *hook.trainer_envs()) for plugin, hook in hooked(TrainerEnvs)
            if plugin.ml_source and isinstance(policy.get(plugin.ml_source), dict)]


def _no_trainer(trainjob: Obj, runtime: Obj) -> Iterator[Diagnostic]:
    """§8-B2: without spec.trainer, torch/jax/xgboost inject no env and no port."""
    if _trainer(trainjob) is not None or _trainer_container(runtime) is None:
        return
    for plugin, names, note in _frameworks(runtime):
        if names:
            yield _warning(
                "TJC-QUIRK-NO-TRAINER",
                f"the TrainJob has no spec.trainer, so upstream's {plugin.ml_source} plugin "
                f"injects none of {names_text(names)}{note} "
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
    for plugin, hook in hooked(GpuEffect):
        policy = ml_policy.get(plugin.ml_source) if plugin.ml_source else None
        if isinstance(policy, dict):
            return hook.gpu_effect(trainer, policy, gpus)
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
    if _trainer(trainjob) is None or not any(names for _, names, _ in _frameworks(runtime)):
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
