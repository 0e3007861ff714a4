"""Resource facts the plugins read (reference §2.6): the runtime's node resources, GPU and CPU
counts per node.

Upstream picks the resources of the first `node` container of the first replicatedJob that is
named `node` or carries the trainer ancestor label (after the resourcesPerNode merge), and a
TrainJob's `resourcesPerNode` replaces (does not merge with) them for these counts. GPU count:
the first resource whose name contains "gpu" (requests first, limits when requests give 0);
upstream reads a Go map, so with several such names its pick is random: here the first in
name order. Counts use the quantity's integer ceiling. Pure.
"""

from __future__ import annotations

from typing import Any

from compiler.common.jsondata import Obj
from compiler.core.context import ANCESTOR_LABEL, NODE, TRAINER, Context
from compiler.kube.quantity import Quantity, QuantityError, canonical_string, is_quantity, parse


def runtime_node_resources(ctx: Context) -> Obj | None:
    """`ExtractResourcePerNodeFromRuntime`: limits/requests of the runtime's node container."""
    for rjob in ctx.spec.get("replicatedJobs") or []:
        labels = rjob["template"].get("metadata", {}).get("labels") or {}
        if rjob.get("name") != NODE and labels.get(ANCESTOR_LABEL) != TRAINER:
            continue
        for container in rjob["template"]["spec"]["template"]["spec"].get("containers") or []:
            if container.get("name") == NODE and "resources" in container:
                res = container["resources"]
                return {"limits": res.get("limits") or {}, "requests": res.get("requests") or {}}
    return None


def node_resources(ctx: Context) -> Obj:
    """The TrainJob's resourcesPerNode when set, else the runtime's node resources."""
    trainer = ctx.trainer
    if trainer is not None and isinstance(trainer.get("resourcesPerNode"), dict):
        res: Obj = trainer["resourcesPerNode"]
        return res
    return runtime_node_resources(ctx) or {}


def _value(quantity: Any) -> int:
    try:
        return parse(quantity).ceil()
    except QuantityError:
        return 0


def _gpus(resources: Any) -> int:
    if not isinstance(resources, dict):
        return 0
    for name in sorted(resources):
        if "gpu" in name.lower():
            return _value(resources[name])
    return 0


def gpu_count(res: Obj) -> int:
    """`GetNumGPUPerNode`: GPUs from requests, or from limits when requests give none."""
    requested = _gpus(res.get("requests"))
    limited = _gpus(res.get("limits"))
    return limited if requested == 0 and limited > 0 else requested


def int32(value: int) -> int:
    """Go's `int32(value)`: wraps around like upstream's int32 fields (absurd inputs only)."""
    return (value + 2**31) % 2**32 - 2**31


def cpu_count(res: Obj) -> int:
    """torch's `getNumCPUPerNode`: the cpu request if non-zero, else the cpu limit, else 0."""
    requests, limits = res.get("requests") or {}, res.get("limits") or {}
    requested = _value(requests["cpu"]) if "cpu" in requests else 0
    if requested:
        return requested
    return _value(limits["cpu"]) if "cpu" in limits else 0


def _add(total: dict[str, Quantity], requests: dict[str, Quantity]) -> None:
    """`addResourceList`: the first quantity of a name keeps its format, later ones add to it."""
    for name, quantity in requests.items():
        total[name] = total[name] + quantity if name in total else quantity


def _max(total: dict[str, Quantity], requests: dict[str, Quantity]) -> None:
    for name, quantity in requests.items():
        if name not in total or quantity.value > total[name].value:
            total[name] = quantity


def _requests(container: Any) -> dict[str, Quantity]:
    requests = ((container or {}).get("resources") or {}).get("requests") or {}
    out = {}
    for name, value in requests.items():
        try:
            out[str(name)] = parse(value)
        except QuantityError:
            continue
    return out


def pod_requests(pod_spec: Obj) -> dict[str, Quantity]:
    """`resourcehelpers.PodRequests`: container requests summed, restartable (sidecar) init
    containers added, each regular init container (plus the sidecars started before it)
    max-ed in, pod-level cpu/memory/hugepages requests taking precedence, plus overhead."""
    total: dict[str, Quantity] = {}
    for container in pod_spec.get("containers") or []:
        _add(total, _requests(container))
    sidecars: dict[str, Quantity] = {}
    init_max: dict[str, Quantity] = {}
    for container in pod_spec.get("initContainers") or []:
        requests = _requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            requests = dict(sidecars)
        else:
            requests = dict(requests)
            _add(requests, sidecars)
        _max(init_max, requests)
    _max(total, init_max)
    pod_level = _requests(pod_spec)
    if any(_pod_level(name) for name in pod_level):
        total.update({name: q for name, q in pod_level.items() if _pod_level(name)})
    _add(total, {name: parse(v) for name, v in (pod_spec.get("overhead") or {}).items()
                 if is_quantity(v)})
    return total


def _pod_level(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def pod_group_totals(pod_sets: list[Any]) -> tuple[int, dict[str, str]]:
    """minMember (pods over every pod set, initializers included) and minResources (each pod
    set's single-pod requests times its count, summed), as the PodGroup plugins compute them
    (from the runtime info's pod spec where the release keeps one: `PodSet.group_pod_spec`)."""
    members = 0
    total: dict[str, Quantity] = {}
    for ps in pod_sets:
        members += ps.count
        spec = ps.pod_spec if ps.group_pod_spec is None else ps.group_pod_spec
        _add(total, {name: q * ps.count for name, q in pod_requests(spec).items()})
    return int32(members), {name: canonical_string(q) for name, q in sorted(total.items())}
