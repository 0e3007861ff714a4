"""Volcano (reference §3.8): gang scheduling with Volcano's PodGroup.

Active when `podGroupPolicy.volcano` is set. Enforce annotates every pod
`scheduling.k8s.io/group-name: <tj>`; build emits `scheduling.volcano.sh/v1beta1 PodGroup <tj>`
with minMember and minResources over all pod sets, the queue from the JobSet annotation
`scheduling.volcano.sh/queue-name` when present, the priorityClassName of the last
replicatedJob that sets one, and the policy's networkTopology.

Admission (upstream's Volcano `Validate`): the propagated queue-name annotation, when present,
is not empty. (The PriorityClass existence check needs a cluster and is skipped.)
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler.common.diagnostics import Diagnostic, error
from compiler.common.jsondata import Obj
from compiler.core.context import Context
from compiler.core.plugins.base import (
    PluginResult,
    PluginSpec,
    SetPodMetadata,
    owned_object,
    pod_group_policy,
)
from compiler.core.plugins.checks import Admission, annotation_source
from compiler.core.plugins.hooks import CustomValidation
from compiler.core.resources import pod_group_totals

GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"


def active(ctx: Context) -> bool:
    """Only for runtimes whose podGroupPolicy sets volcano."""
    return pod_group_policy(ctx, "volcano") is not None


def enforce(ctx: Context) -> PluginResult:
    """The group-name annotation on every pod template."""
    return PluginResult(edits=(SetPodMetadata("annotations",
                                              ((GROUP_NAME_ANNOTATION, ctx.name),)),))


def build(ctx: Context) -> PluginResult:
    """The PodGroup."""
    members, resources = pod_group_totals(ctx.pod_sets)
    spec: Obj = {"minMember": members, "minResources": resources}
    if QUEUE_ANNOTATION in ctx.annotations:
        spec["queue"] = ctx.annotations[QUEUE_ANNOTATION]
    for rjob in ctx.spec.get("replicatedJobs") or []:
        priority = rjob["template"]["spec"]["template"]["spec"].get("priorityClassName")
        if priority is not None:
            spec["priorityClassName"] = priority
    topology = (pod_group_policy(ctx, "volcano") or {}).get("networkTopology")
    if isinstance(topology, dict):
        spec["networkTopology"] = {"mode": topology.get("mode", "hard"),
                                   "highestTierAllowed": topology.get("highestTierAllowed", 1)}
    return PluginResult(objects=(owned_object(ctx, "scheduling.volcano.sh/v1beta1", "PodGroup",
                                              ctx.name, spec=spec),))


def validate(job: Admission) -> Iterator[Diagnostic]:
    """Volcano `Validate`: the propagated queue-name annotation is not empty."""
    if job.policy("podGroupPolicy", "volcano") is None or job.ctx is None:
        return
    if job.ctx.annotations.get(QUEUE_ANNOTATION, None) != "":
        return
    subject, path = annotation_source(job, QUEUE_ANNOTATION)
    yield error("TJC-WEBHOOK-VOLCANO-QUEUE",
                "volcano queue name must not be empty; set a queue name or drop the "
                f"{QUEUE_ANNOTATION} annotation", path, subject=subject)


class Hooks(CustomValidation):
    """Volcano's hook: admission."""

    validate = staticmethod(validate)


PLUGIN = PluginSpec(
    name="volcano",
    policy="podGroupPolicy.volcano",
    active=active,
    enforce=enforce,
    build=build,
    requires=frozenset({"pod-counts"}),
    provides=frozenset({"pod-scheduling-metadata", "side-objects"}),
    hooks=(Hooks(),),
)
