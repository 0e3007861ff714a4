"""The JobSet builder (reference §3.10): PreBuildSync and Build of upstream's jobset plugin.

Always active and ordered last by its facts. It writes parallelism = completions = the pod-set
count on every replicatedJob, then builds the JobSet: initializer STORAGE_URI/env/envFrom,
trainer image/command/args/env, replicas, scheduler pod labels/annotations, suspend, and the
controller ownerReference (only when the TrainJob has a uid: the compiler never invents one).
Every field it writes is recorded in the context's origin recorder (`compiler.core.provenance`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.common.diagnostics import Path
from compiler.common.jsondata import Obj
from compiler.core.context import ANCESTOR_LABEL, JOBSET_API, NODE, POD_SPEC, TRAINER, Context
from compiler.core.plugins.base import PluginResult, PluginSpec, ml_policy_has, object_metadata
from compiler.core.provenance import Hit, Origin, Writes, is_related, made, trainjob_field
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
    jobs_at = ctx.out_path("spec", "replicatedJobs")
    _sync_parallel_count(ctx, jobs, jobs_at)
    for ps in ctx.pod_sets:
        _upsert_back(ctx, ps.index)
    for index, rjob in enumerate(jobs):
        ancestor = (rjob["template"].get("metadata", {}).get("labels") or {}).get(ANCESTOR_LABEL)
        at = (*jobs_at, index)
        if ancestor in INITIALIZERS:
            _initializer(ctx, rjob, ancestor, at)
        _trainer(ctx, rjob, ancestor, at)
        pod_meta = rjob["template"]["spec"]["template"].setdefault("metadata", {})
        for key, values in (("labels", ctx.pod_labels), ("annotations", ctx.pod_annotations)):
            if values:
                _pod_metadata(ctx, pod_meta, key, values, at)
    suspend = ctx.trainjob.get("spec", {}).get("suspend")
    spec.pop("suspend", None)
    if suspend is not None:
        spec["suspend"] = suspend
        ctx.origins.add((ctx.out_path("spec", "suspend"), SUSPEND))
    return PluginResult(objects=(_jobset(ctx, spec),))


def _pod_metadata(ctx: Context, pod_meta: Obj, key: str, values: dict[str, str],
                  at: Path) -> None:
    """The scheduler pod labels or annotations the plugins set, merged into a job's pod
    template metadata."""
    pod_meta[key] = {**(pod_meta.get(key) or {}), **values}
    for name in values:
        ctx.origins.add(((*at, "template", "spec", "template", "metadata", key, name),
                         ctx.pod_meta_origins.get((key, name), BUILDER)))


def _sync_parallel_count(ctx: Context, jobs: list[Obj], jobs_at: Path) -> None:
    for ps in ctx.pod_sets:
        for rjob in jobs:
            if rjob.get("name") == ps.name:
                job_spec = rjob["template"]["spec"]
                job_spec["parallelism"] = ps.count
                job_spec["completions"] = ps.count
                break
    ctx.origins.add((jobs_at, COUNT_WRITES, (jobs, ctx.pod_sets)))


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
            if landed == list(range(len(ports))):
                continue  # (the ports are their own write-back: each lands where it is)
            path = ctx.pod_path(ps, key, k, "ports")
            ctx.origins.add_output(ctx.root, {"spec": ctx.spec})  # (the JobSet so far)
            origins = [ctx.origins.lookup((*path, j)) for j in range(len(ports))]
            for origin, index in zip(origins, landed, strict=False):
                ctx.origins.add(((*path, index), origin or BUILDER))
            ports[:] = after


def _containers(rjob: Obj) -> list[tuple[int, Obj]]:
    containers = rjob["template"]["spec"]["template"]["spec"].get("containers")
    return [(k, c) for k, c in enumerate(containers or []) if isinstance(c, dict)]


def _initializer(ctx: Context, rjob: Obj, ancestor: str, at: Path) -> None:
    rjob["replicas"] = 1
    ctx.origins.add(((*at, "replicas"), RUN_ONCE))
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
            landed = upsert_env(container, [{"name": "STORAGE_URI",
                                             "value": config["storageUri"]}])
            ctx.origins.add(((*path, "env"), source, landed, ["storageUri"]))
        _env(ctx, container, config.get("env"), (*source, "env"), path)
        secret = config.get("secretRef")
        if isinstance(secret, dict):
            container.setdefault("envFrom", []).append(
                {"secretRef": {"name": secret.get("name", "")}})
            ctx.origins.add(((*path, "envFrom", len(container["envFrom"]) - 1),
                             trainjob_field((*source, "secretRef"))))


def _env(ctx: Context, container: Obj, envs: Any, source: Path, path: Path) -> None:
    """Upsert a TrainJob env list, each item recorded as its TrainJob field's."""
    items: list[str | int] = [i for i, env in enumerate(envs or []) if isinstance(env, dict)]
    if items:
        landed = upsert_env(container, [env_var(envs[i]) for i in items])
        ctx.origins.add(((*path, "env"), source, landed, items))


def _trainer(ctx: Context, rjob: Obj, ancestor: str | None, at: Path) -> None:
    trainer = ctx.trainer
    if ancestor == TRAINER:
        rjob["replicas"] = 1
        ctx.origins.add(((*at, "replicas"), RUN_ONCE))
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
    image = command = args = None
    if trainer.get("image") is not None:
        container["image"] = trainer["image"]
        image = IMAGE
    if ctx.trainer_command is not None:
        _set_list(container, "command", ctx.trainer_command)
        command = ctx.command_origin or COMMAND
    if isinstance(trainer.get("args"), list) and not ctx.clear_trainer_args:
        _set_list(container, "args", trainer["args"])
        args = ARGS
    if image or command or args:
        ctx.origins.add((path, OVERRIDE_WRITES, (image, command, args)))


def _set_list(container: Obj, key: str, values: list[str]) -> None:
    """Set a list field; an empty list clears it (it marshals away, as upstream's)."""
    if values:
        container[key] = list(values)
    else:
        container.pop(key, None)


def _jobset(ctx: Context, spec: Obj) -> Obj:
    metadata = object_metadata(ctx, ctx.name)
    if ctx.labels:
        metadata["labels"] = dict(ctx.labels)
    if ctx.annotations:
        metadata["annotations"] = dict(ctx.annotations)
    obj = {"apiVersion": JOBSET_API[0], "kind": JOBSET_API[1], "metadata": metadata, "spec": spec}
    ctx.origins.add_output(ctx.root, obj)
    ctx.origins.add((ctx.root, OBJECT_WRITES, None))
    return obj


class _CountWrites(Writes):
    """Each pod set's count, written as the parallelism and completions of the first job
    (below `at`, the JobSet's replicatedJobs) of its name. `data`: the jobs and the pod
    sets."""

    def find(self, at: Path, data: Any, path: Path) -> Hit | None:
        n = len(at)
        if len(path) > n + 3 and path[n + 3] not in ("parallelism", "completions"):
            return None  # (elsewhere in a job's spec)
        for written, origin in reversed(list(self.writes(at, data))):
            if is_related(written, path):
                return written, origin
        return None

    def writes(self, at: Path, data: Any) -> Iterator[Hit]:
        jobs, pod_sets = data
        for ps in pod_sets:
            index = next((i for i, rjob in enumerate(jobs) if rjob.get("name") == ps.name), None)
            if index is not None:
                yield (*at, index, "template", "spec", "parallelism"), ps.count_origin
                yield (*at, index, "template", "spec", "completions"), ps.count_origin


class _OverrideWrites(Writes):
    """The TrainJob's image, command and args written into the trainer's `node` container
    at `at` (`data`: their origins, None for one not written)."""

    KEYS = ("image", "command", "args")

    def find(self, at: Path, data: Any, path: Path) -> Hit | None:
        below = path[len(at):]
        for key, origin in zip(reversed(self.KEYS), reversed(data), strict=True):
            if origin is not None and (not below or below[0] == key):
                return (*at, key), origin
        return None

    def writes(self, at: Path, data: Any) -> Iterator[Hit]:
        for key, origin in zip(self.KEYS, data, strict=True):
            if origin is not None:
                yield (*at, key), origin


class _ObjectWrites(Writes):
    """What the builder writes into the JobSet object around its spec."""

    WRITES: tuple[tuple[Path, Origin], ...] = (
        (("apiVersion",), BUILDER), (("kind",), BUILDER),
        *((("metadata", key), origin) for key, origin in METADATA.items()),
        (("metadata", "ownerReferences"), OWNER))

    def find(self, at: Path, data: Any, path: Path) -> Hit | None:
        if len(path) > 2 and path[2] == "spec":
            return None
        below = path[2:]
        size = len(below)
        for written, origin in reversed(self.WRITES):
            if below[:len(written)] == written if len(written) <= size else \
                    written[:size] == below:
                return (*at, *written), origin
        return None

    def writes(self, at: Path, data: Any) -> Iterator[Hit]:
        for written, origin in self.WRITES:
            yield (*at, *written), origin


COUNT_WRITES = _CountWrites()
OVERRIDE_WRITES = _OverrideWrites()
OBJECT_WRITES = _ObjectWrites()


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
