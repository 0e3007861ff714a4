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

from compiler.context import ANCESTOR_LABEL, NODE, TRAINER, Context
from compiler.quantity import QuantityError, parse

Obj = dict[str, Any]


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
