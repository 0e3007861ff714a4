"""Coscheduling (reference §3.7): gang scheduling with the scheduler-plugins PodGroup.

Active when `podGroupPolicy.coscheduling` is set. Enforce labels every pod
`scheduling.x-k8s.io/pod-group: <tj>`; build emits `scheduling.x-k8s.io/v1alpha1 PodGroup <tj>`
with minMember and minResources over all pod sets (it needs the final counts, so it comes after
every ML-policy plugin) and the policy's scheduleTimeoutSeconds. Upstream skips the PodGroup
when one exists and the TrainJob runs: that is the controller's decision, not the compiler's.
"""

from __future__ import annotations

from compiler.core.context import Context
from compiler.core.plugins.base import (
    PluginResult,
    PluginSpec,
    SetPodMetadata,
    owned_object,
    pod_group_policy,
)
from compiler.core.resources import pod_group_totals

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def active(ctx: Context) -> bool:
    """Only for runtimes whose podGroupPolicy sets coscheduling."""
    return pod_group_policy(ctx, "coscheduling") is not None


def enforce(ctx: Context) -> PluginResult:
    """The pod-group label on every pod template."""
    return PluginResult(edits=(SetPodMetadata("labels", ((POD_GROUP_LABEL, ctx.name),)),))


def build(ctx: Context) -> PluginResult:
    """The PodGroup."""
    members, resources = pod_group_totals(ctx.pod_sets)
    policy = pod_group_policy(ctx, "coscheduling") or {}
    spec = {"minMember": members, "minResources": resources,
            "scheduleTimeoutSeconds": policy.get("scheduleTimeoutSeconds", 60)}
    return PluginResult(objects=(owned_object(ctx, "scheduling.x-k8s.io/v1alpha1", "PodGroup",
                                              ctx.name, spec=spec),))


PLUGIN = PluginSpec(
    name="coscheduling",
    policy="podGroupPolicy.coscheduling",
    active=active,
    enforce=enforce,
    build=build,
    requires=frozenset({"pod-counts"}),
    provides=frozenset({"pod-scheduling-metadata", "side-objects"}),
)
