"""The JobSet builder (reference §3.10): PreBuildSync and Build of upstream's jobset plugin.

Always active and ordered last by its facts. It writes parallelism = completions = the pod-set
count on every replicatedJob, then builds the JobSet: initializer STORAGE_URI/env/envFrom,
trainer image/command/args/env, replicas, scheduler pod labels/annotations, suspend, and the
controller ownerReference (only when the TrainJob has a uid: the compiler never invents one).
"""

from __future__ import annotations

from compiler.context import ANCESTOR_LABEL, NODE, TRAINER, Context
from compiler.data import Obj
from compiler.plugins.base import PluginResult, PluginSpec, ml_policy_has, object_metadata
from compiler.upsert import env_vars, port_match, upsert, upsert_env

INITIALIZERS = ("dataset-initializer", "model-initializer")
INITIALIZER_KEYS = {"dataset-initializer": "dataset", "model-initializer": "model"}


def active(ctx: Context) -> bool:
    """The JobSet is always built."""
    return True


def build(ctx: Context) -> PluginResult:
    """Return the JobSet object."""
    spec = ctx.spec  # the builder runs last and takes the spec over
    jobs = spec.get("replicatedJobs") or []
    _sync_parallel_count(ctx, jobs)
    for ps in ctx.pod_sets:
        _upsert_back(ps.pod_spec)
    for rjob in jobs:
        ancestor = (rjob["template"].get("metadata", {}).get("labels") or {}).get(ANCESTOR_LABEL)
        if ancestor in INITIALIZERS:
            _initializer(ctx, rjob, ancestor)
        _trainer(ctx, rjob, ancestor)
        pod_meta = rjob["template"]["spec"]["template"].setdefault("metadata", {})
        _merge_map(pod_meta, "labels", ctx.pod_labels)
        _merge_map(pod_meta, "annotations", ctx.pod_annotations)
    suspend = ctx.trainjob.get("spec", {}).get("suspend")
    spec.pop("suspend", None)
    if suspend is not None:
        spec["suspend"] = suspend
    return PluginResult(objects=(_jobset(ctx, spec),))


def _sync_parallel_count(ctx: Context, jobs: list[Obj]) -> None:
    for ps in ctx.pod_sets:
        for rjob in jobs:
            if rjob.get("name") == ps.name:
                job_spec = rjob["template"]["spec"]
                job_spec["parallelism"] = ps.count
                job_spec["completions"] = ps.count
                break


def _upsert_back(pod_spec: Obj) -> None:
    """Build's write-back of each pod set's container ports.

    Upstream upserts every pod-set list (volumes, env, ports, mounts) into the JobSet list it
    was taken from. Volumes, env and mounts have unique keys (the CRDs key them by name and
    mountPath), so that changes nothing; but unnamed ports all match each other (nil name ==
    nil name), so the first unnamed port ends up holding the last one: `[8080, 6006]` becomes
    `[6006, 6006]` (reference §4).
    """
    for key in ("containers", "initContainers"):
        for container in pod_spec.get(key) or []:
            ports = container.get("ports")
            if ports and len(ports) > 1:
                upsert(ports, list(ports), port_match)


def _containers(rjob: Obj) -> list[Obj]:
    containers = rjob["template"]["spec"]["template"]["spec"].get("containers")
    return [c for c in containers or [] if isinstance(c, dict)]


def _initializer(ctx: Context, rjob: Obj, ancestor: str) -> None:
    rjob["replicas"] = 1
    config = (ctx.trainjob.get("spec", {}).get("initializer") or {}).get(
        INITIALIZER_KEYS[ancestor])
    if not isinstance(config, dict):
        return
    for container in _containers(rjob):
        if container.get("name") != ancestor:
            continue
        if config.get("storageUri") is not None:
            upsert_env(container, [{"name": "STORAGE_URI", "value": config["storageUri"]}])
        upsert_env(container, env_vars(config.get("env")))
        secret = config.get("secretRef")
        if isinstance(secret, dict):
            container.setdefault("envFrom", []).append(
                {"secretRef": {"name": secret.get("name", "")}})


def _trainer(ctx: Context, rjob: Obj, ancestor: str | None) -> None:
    trainer = ctx.trainer
    if ancestor == TRAINER:
        rjob["replicas"] = 1
        for container in _containers(rjob):
            if container.get("name") == NODE and trainer is not None:
                _trainer_overrides(ctx, container, trainer)
    launcher_as_node = ml_policy_has(ctx, "mpi") and \
        (ctx.ml_policy or {})["mpi"].get("runLauncherAsNode") is True
    if ancestor == TRAINER or (launcher_as_node and rjob.get("name") == NODE):
        for container in _containers(rjob):
            if container.get("name") == NODE and trainer is not None:
                upsert_env(container, env_vars(trainer.get("env")))


def _trainer_overrides(ctx: Context, container: Obj, trainer: Obj) -> None:
    if trainer.get("image") is not None:
        container["image"] = trainer["image"]
    if ctx.trainer_command is not None:
        _set_list(container, "command", ctx.trainer_command)
    if isinstance(trainer.get("args"), list) and not ctx.clear_trainer_args:
        _set_list(container, "args", trainer["args"])


def _set_list(container: Obj, key: str, values: list[str]) -> None:
    """Set a list field; an empty list clears it (it marshals away, as upstream's)."""
    if values:
        container[key] = list(values)
    else:
        container.pop(key, None)


def _merge_map(meta: Obj, key: str, values: dict[str, str]) -> None:
    if values:
        meta[key] = {**(meta.get(key) or {}), **values}


def _jobset(ctx: Context, spec: Obj) -> Obj:
    metadata = object_metadata(ctx, ctx.name)
    if ctx.labels:
        metadata["labels"] = dict(ctx.labels)
    if ctx.annotations:
        metadata["annotations"] = dict(ctx.annotations)
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": metadata, "spec": spec}


PLUGIN = PluginSpec(
    name="jobset",
    policy="always",
    active=active,
    build=build,
    requires=frozenset({"pod-counts"}),
    provides=frozenset({"jobset"}),
    after=frozenset({"trainer-env", "framework-env", "trainer-port", "volumes",
                     "pod-scheduling-metadata", "side-objects"}),
)
