"""The JobSet builder (reference §3.10): PreBuildSync and Build of upstream's jobset plugin.

Always active and ordered last by its facts. It writes parallelism = completions = the pod-set
count on every replicatedJob, then builds the JobSet: initializer STORAGE_URI/env/envFrom,
trainer image/command/args/env, replicas, scheduler pod labels/annotations, suspend, and the
controller ownerReference (only when the TrainJob has a uid: the compiler never invents one).
Every field it writes is recorded in the context's origin recorder (`compiler.core.provenance`),
with whether the write changed it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.common.diagnostics import Path
from compiler.common.jsondata import Obj
from compiler.core.context import ANCESTOR_LABEL, JOBSET_API, NODE, POD_SPEC, TRAINER, Context
from compiler.core.plugins.base import PluginResult, PluginSpec, ml_policy_has, object_metadata
from compiler.core.provenance import Origin, Write, made, trainjob_field
from compiler.core.upsert import env_var, port_match, upsert, upsert_env

INITIALIZERS = ("dataset-initializer", "model-initializer")
INITIALIZER_KEYS = {"dataset-initializer": "dataset", "model-initializer": "model"}
RUN_ONCE = made("JobSet builder (initializer and trainer jobs run once)")
BUILDER = made("JobSet builder")
SUSPEND = trainjob_field(("spec", "suspend"), exact=True, default_note=" (CRD default)")
IMAGE = trainjob_field(("spec", "trainer", "image"), exact=True)
COMMAND = trainjob_field(("spec", "trainer", "command"), exact=True)
ARGS = trainjob_field(("spec", "trainer", "args"), exact=True)
OWNER = Origin("trainJob metadata.uid", "trainjob", ("metadata", "uid"))
METADATA = {key: trainjob_field(("metadata", key), exact=True) for key in ("name", "namespace")}


def active(ctx: Context) -> bool:
    """The JobSet is always built."""
    return True


def build(ctx: Context) -> PluginResult:
    """Return the JobSet object."""
    spec = ctx.spec  # the builder runs last and takes the spec over
    jobs = spec.get("replicatedJobs") or []
    _sync_parallel_count(ctx, jobs)
    for ps in ctx.pod_sets:
        _upsert_back(ctx, ps.index)
    for index, rjob in enumerate(jobs):
        ancestor = (rjob["template"].get("metadata", {}).get("labels") or {}).get(ANCESTOR_LABEL)
        at = ctx.out_path("spec", "replicatedJobs", index)
        if ancestor in INITIALIZERS:
            _initializer(ctx, rjob, ancestor, at)
        _trainer(ctx, rjob, ancestor, at)
        pod_meta = rjob["template"]["spec"]["template"].setdefault("metadata", {})
        for key, values in (("labels", ctx.pod_labels), ("annotations", ctx.pod_annotations)):
            if values:
                _pod_metadata(ctx, pod_meta, key, values, at)
    suspend = ctx.trainjob.get("spec", {}).get("suspend")
    was = spec.pop("suspend", None)
    if suspend is not None:
        spec["suspend"] = suspend
        ctx.origins.record(ctx.out_path("spec", "suspend"), SUSPEND, was != suspend)
    return PluginResult(objects=(_jobset(ctx, spec),))


def _pod_metadata(ctx: Context, pod_meta: Obj, key: str, values: dict[str, str],
                  at: Path) -> None:
    """The scheduler pod labels or annotations the plugins set, merged into a job's pod
    template metadata."""
    old = pod_meta.get(key) or {}
    for name, value in values.items():
        ctx.origins.record((*at, "template", "spec", "template", "metadata", key, name),
                           ctx.pod_meta_origins.get((key, name), BUILDER),
                           name not in old or old[name] != value)
    pod_meta[key] = {**old, **values}


def _sync_parallel_count(ctx: Context, jobs: list[Obj]) -> None:
    for ps in ctx.pod_sets:
        for index, rjob in enumerate(jobs):
            if rjob.get("name") == ps.name:
                job_spec = rjob["template"]["spec"]
                at = ctx.out_path("spec", "replicatedJobs", index, "template", "spec")
                for key in ("parallelism", "completions"):
                    ctx.origins.record((*at, key), ps.count_origin, job_spec.get(key) != ps.count)
                    job_spec[key] = ps.count
                break


def _upsert_back(ctx: Context, pod_set: int) -> None:
    """Build's write-back of each pod set's container ports.

    Upstream upserts every pod-set list (volumes, env, ports, mounts) into the JobSet list it
    was taken from. Volumes, env and mounts have unique keys (the CRDs key them by name and
    mountPath), so that changes nothing; but unnamed ports all match each other (nil name ==
    nil name), so the first unnamed port ends up holding the last one: `[8080, 6006]` becomes
    `[6006, 6006]` (reference §4). The port that lands keeps its origin.
    """
    ps = ctx.pod_sets[pod_set]
    for key in ("containers", "initContainers"):
        for k, container in enumerate(ps.pod_spec.get(key) or []):
            ports = container.get("ports")
            if not ports or len(ports) < 2:
                continue
            after = list(ports)
            landed = upsert(after, list(ports), port_match)
            if after == ports:
                continue  # (the ports are their own write-back: each lands where it is)
            path = ctx.pod_path(ps, key, k, "ports")
            origins = [ctx.origins.lookup((*path, j)) for j in range(len(ports))]
            for j, (origin, index) in enumerate(zip(origins, landed, strict=False)):
                ctx.origins.record((*path, index), origin or BUILDER, ports[j] != ports[index])
            ports[:] = after


def _containers(rjob: Obj) -> list[tuple[int, Obj]]:
    containers = rjob["template"]["spec"]["template"]["spec"].get("containers")
    return [(k, c) for k, c in enumerate(containers or []) if isinstance(c, dict)]


def _run_once(ctx: Context, rjob: Obj, at: Path) -> None:
    ctx.origins.record((*at, "replicas"), RUN_ONCE, rjob.get("replicas") != 1)
    rjob["replicas"] = 1


def _initializer(ctx: Context, rjob: Obj, ancestor: str, at: Path) -> None:
    _run_once(ctx, rjob, at)
    key = INITIALIZER_KEYS[ancestor]
    config = (ctx.trainjob.get("spec", {}).get("initializer") or {}).get(key)
    if not isinstance(config, dict):
        return
    source: Path = ("spec", "initializer", key)
    for k, container in _containers(rjob):
        if container.get("name") != ancestor:
            continue
        path = (*at, *POD_SPEC, "containers", k)
        if config.get("storageUri") is not None:
            _upsert_env(ctx, container, [{"name": "STORAGE_URI", "value": config["storageUri"]}],
                        [(*source, "storageUri")], path)
        _env(ctx, container, config.get("env"), (*source, "env"), path)
        secret = config.get("secretRef")
        if isinstance(secret, dict):
            container.setdefault("envFrom", []).append(
                {"secretRef": {"name": secret.get("name", "")}})
            ctx.origins.record((*path, "envFrom", len(container["envFrom"]) - 1),
                               trainjob_field((*source, "secretRef")))


def _env(ctx: Context, container: Obj, envs: Any, source: Path, path: Path) -> None:
    """Upsert a TrainJob env list, each item recorded as its TrainJob field's."""
    items = [i for i, env in enumerate(envs or []) if isinstance(env, dict)]
    if items:
        _upsert_env(ctx, container, [env_var(envs[i]) for i in items],
                    [(*source, i) for i in items], path)


def _upsert_env(ctx: Context, container: Obj, envs: list[Obj], sources: list[Path],
                path: Path) -> None:
    """Upsert env vars into the container at `path`, each recorded as written from its
    TrainJob field (worked out when looked up; one that replaced an equal var changed
    nothing)."""
    before = list(container.get("env") or ())
    landed = upsert_env(container, envs)
    after = list(container["env"])
    ctx.origins.defer(lambda: (
        ((*path, "env", i), trainjob_field(source), i >= len(before) or before[i] != after[i])
        for i, source in zip(landed, sources, strict=True)))


def _trainer(ctx: Context, rjob: Obj, ancestor: str | None, at: Path) -> None:
    trainer = ctx.trainer
    if ancestor == TRAINER:
        _run_once(ctx, rjob, at)
        for k, container in _containers(rjob):
            if container.get("name") == NODE and trainer is not None:
                _trainer_overrides(ctx, container, trainer, (*at, *POD_SPEC, "containers", k))
    launcher_as_node = ml_policy_has(ctx, "mpi") and \
        (ctx.ml_policy or {})["mpi"].get("runLauncherAsNode") is True
    if ancestor == TRAINER or (launcher_as_node and rjob.get("name") == NODE):
        for k, container in _containers(rjob):
            if container.get("name") == NODE and trainer is not None:
                _env(ctx, container, trainer.get("env"), ("spec", "trainer", "env"),
                     (*at, *POD_SPEC, "containers", k))


def _trainer_overrides(ctx: Context, container: Obj, trainer: Obj, path: Path) -> None:
    if trainer.get("image") is not None:
        ctx.origins.record((*path, "image"), IMAGE, container.get("image") != trainer["image"])
        container["image"] = trainer["image"]
    if ctx.trainer_command is not None:
        ctx.origins.record((*path, "command"), ctx.command_origin or COMMAND,
                           _set_list(container, "command", ctx.trainer_command))
    if isinstance(trainer.get("args"), list) and not ctx.clear_trainer_args:
        ctx.origins.record((*path, "args"), ARGS, _set_list(container, "args", trainer["args"]))


def _set_list(container: Obj, key: str, values: list[str]) -> bool:
    """Set a list field; an empty list clears it (it marshals away, as upstream's). Whether
    that changed the field."""
    old = container.get(key)
    if values:
        container[key] = list(values)
    else:
        container.pop(key, None)
    return old != container.get(key)


def _jobset(ctx: Context, spec: Obj) -> Obj:
    metadata = object_metadata(ctx, ctx.name)
    if ctx.labels:
        metadata["labels"] = dict(ctx.labels)
    if ctx.annotations:
        metadata["annotations"] = dict(ctx.annotations)
    obj = {"apiVersion": JOBSET_API[0], "kind": JOBSET_API[1], "metadata": metadata, "spec": spec}
    ctx.origins.add_output(ctx.out_path(), obj)
    root = ctx.root
    ctx.origins.defer(lambda: _object_writes(root))
    return obj


def _object_writes(root: Path) -> Iterator[Write]:
    """What the builder writes into the JobSet object around its spec."""
    for key in ("apiVersion", "kind"):
        yield (*root, key), BUILDER, True
    for key, origin in METADATA.items():
        yield (*root, "metadata", key), origin, True
    yield (*root, "metadata", "ownerReferences"), OWNER, True


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
