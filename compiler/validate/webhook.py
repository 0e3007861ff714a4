"""Upstream's semantic admission rules (reference §5.3): the TrainJob validator, the plugins'
`Validate` functions it runs, and the TrainingRuntime/ClusterTrainingRuntime validators.

`validate_trainjob(trainjob, runtime, old=...)` and `validate_runtime(runtime, old=...)` take
documents after `compiler.structural.sanitize` and `compiler.defaults.default_in_place` and return
diagnostics: errors for what the webhooks reject, warnings for deprecated runtimes. Called by
`compiler.validation` (`tjc validate`, and `tjc render` before it compiles). Pure: it reads no
cluster, file or clock, and never mutates its arguments.

As upstream (`ValidateObjects`), the TrainJob rules see the runtime through the compile context
(`compiler.context.build_context`: the JobSet template after `runtimePatches`, one pod set per
replicatedJob) without running any plugin, so counts and framework envs are not applied.
Plugin rules run in the registry order coscheduling, flux, volcano, mpi, plainml, torch, jobset,
jax, xgboost (upstream's is random); the deprecation warning comes first.

Where this differs from upstream, on purpose:
- Field paths are upstream's, except where upstream reports one offending item at its list or
  at a path without the item's index (`spec.runtimePatches`, `spec.runtimePatches.manager`):
  the path then names the item, so upstream's path is always a prefix of ours. Upstream's
  ClusterTrainingRuntime not-found path `spec.RuntimeRef` (capital R) is `spec.runtimeRef` here.
  Volcano's `spec.annotations[...]` and Flux's `spec.trainer.initContainers` name no field of a
  TrainJob; those diagnostics point where the value comes from (a runtime patch or the runtime).
- Upstream checks patch job and container names against the spec after the patches are merged,
  where the merge has already added them, so in a live cluster those checks never fire and the
  patch yields a job or container without an image that fails only when the JobSet's Jobs are
  created. Here they are checked against the runtime's own template, as their messages say.
- Checks that need a live cluster are skipped: on update, whether the JobSet's replicated jobs
  are still active (`RuntimePatches cannot be modified when the JobSet's ReplicatedJob ... is
  still active`), and whether a Volcano `priorityClassName` names an existing PriorityClass.
- A runtime labelled `trainer.kubeflow.org/webhook-validation: disabled` is not checked, as the
  webhook's objectSelector skips it; a TrainingRuntime update is not checked (upstream's
  ValidateUpdate returns nothing). TrainJob rules always run (their webhook has no selector).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from compiler import typed
from compiler.context import ANCESTOR_LABEL, NODE, Context, build_context
from compiler.data import Obj, fast_copy, get_path
from compiler.defaults import canonicalize_quantities, default_in_place, quantity_tree
from compiler.diagnostics import Diagnostic, Path, Severity, error
from compiler.errors import TjcError
from compiler.plugins.mpi import LAUNCHER
from compiler.plugins.torch import (
    IMMUTABLE_CONFIGS,
    TUNE_ENTRYPOINT,
    is_lora,
    is_qlora,
    model_name,
    recipe_and_config,
)
from compiler.resolve import wanted_key
from compiler.resources import gpu_count, node_resources
from compiler.structural import sanitize

SUPPORT_LABEL = "trainer.kubeflow.org/support"
WEBHOOK_VALIDATION_LABEL = "trainer.kubeflow.org/webhook-validation"
DEPRECATION_POLICY_URL = ("https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html"
                          "#runtime-deprecation-policy")
DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
INITIALIZER_VOLUME = "initializer"
TORCH_RESERVED_ENVS = frozenset({"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK",
                                 "PET_MASTER_ADDR", "PET_MASTER_PORT"})
MPI_RESERVED_ENVS = frozenset({"OMPI_MCA_orte_default_hostfile", "OMPI_MCA_plm_rsh_args",
                               "OMPI_MCA_orte_keep_fqdn_hostnames",
                               "OMPI_MCA_orte_set_default_slots"})
XGBOOST_RESERVED_ENVS = frozenset({"DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID",
                                   "DMLC_NUM_WORKER"})
TORCHTUNE_MODELS = frozenset({"llama3_2/1B", "llama3_2/3B", "llama3_3/70B", "qwen2_5/1.5B"})
LLAMA_70B, QWEN_1_5B = "llama3_3/70B", "qwen2_5/1.5B"
QLORA_SUFFIX, QLORA_SINGLE_DEVICE_SUFFIX = "_qlora", "_qlora_single_device"
VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"
FLUX_INSTALLER = "flux-installer"
# the container an ancestor's job must hold (`validateReplicatedJobs`)
ANCESTOR_CONTAINERS = {"trainer": NODE, MODEL_INITIALIZER: MODEL_INITIALIZER,
                       DATASET_INITIALIZER: DATASET_INITIALIZER}
PATCH_ENV_CONTAINERS = frozenset({DATASET_INITIALIZER, MODEL_INITIALIZER, NODE})

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + "(\\." + _DNS1123_LABEL + ")*"
_HTTP_PATH = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"
_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    f"for validation is '{_DNS1123_SUBDOMAIN}')")

TRAINER_ENV: Path = ("spec", "trainer", "env")
NUM_NODES: Path = ("spec", "trainer", "numNodes")
RUNTIME_REF: Path = ("spec", "runtimeRef")
RUNTIME_REF_NAME: Path = ("spec", "runtimeRef", "name")
PATCHES: Path = ("spec", "runtimePatches")
POD_SPEC: Path = ("template", "spec", "template", "spec")
PATCH_JOBS: Path = ("trainingRuntimeSpec", "template", "spec", "replicatedJobs")
RUNTIME_JOBS: Path = ("spec", "template", "spec", "replicatedJobs")


@dataclass
class _Input:
    """One TrainJob validation: the documents and the context built from them (None when the
    context cannot be built; upstream then has no runtime info). The context is built on first
    use: most TrainJobs meet no rule that needs it."""

    trainjob: Obj
    runtime: Obj
    problem: Diagnostic | None = None

    @functools.cached_property
    def ctx(self) -> Context | None:
        ctx, self.problem = _context(self.trainjob, self.runtime)
        return ctx

    @property
    def spec(self) -> Obj:
        spec = self.trainjob.get("spec")
        return spec if isinstance(spec, dict) else {}

    @property
    def trainer(self) -> Obj | None:
        trainer = self.spec.get("trainer")
        return trainer if isinstance(trainer, dict) else None

    def policy(self, group: str, key: str) -> Obj | None:
        """`spec.<group>.<key>` of the runtime (`mlPolicy.torch`, `podGroupPolicy.volcano`)."""
        outer = _dict(_dict(self.runtime.get("spec")).get(group))
        value = outer.get(key)
        return value if isinstance(value, dict) else None


# ----------------------------------------------------------------------------- entry points


def validate_trainjob(trainjob: Obj, runtime: Obj | None, *,
                      old: Obj | None = None) -> list[Diagnostic]:
    """Upstream's TrainJob admission checks against the runtime it references (None when no
    document or built-in provides it), with `old` the previous version on an update."""
    if runtime is None:
        return [_not_found(trainjob)]
    found: list[Diagnostic] = []
    deprecated = _deprecated_reference(runtime)
    if deprecated is not None:
        found.append(deprecated)
    job = _Input(trainjob, runtime)
    if _dict(trainjob.get("spec")).get("runtimePatches") and job.ctx is None \
            and job.problem is not None:
        found.append(job.problem)  # only patches can keep the context from being built
    for rule in _TRAINJOB_RULES:
        found.extend(rule(job))
    if old is not None:
        found.extend(_patches_immutable(job, old))
    return found


def validate_runtime(runtime: Obj, *, old: Obj | None = None) -> list[Diagnostic]:
    """Upstream's TrainingRuntime/ClusterTrainingRuntime admission checks (`old`: the previous
    version on an update)."""
    labels = _dict(_dict(runtime.get("metadata")).get("labels"))
    if labels.get(WEBHOOK_VALIDATION_LABEL) == "disabled":
        return []
    kind = runtime.get("kind")
    if kind == "TrainingRuntime" and old is not None:
        return []
    found: list[Diagnostic] = []
    if kind == "ClusterTrainingRuntime" and old is None and _is_deprecated(runtime):
        name = _dict(runtime.get("metadata")).get("name", "")
        found.append(Diagnostic(
            Severity.WARNING, "TJC-WEBHOOK-DEPRECATED-RUNTIME",
            f'ClusterTrainingRuntime "{name}" is deprecated and will be removed in a future '
            f"release of Kubeflow Trainer. See runtime deprecation policy: "
            f"{DEPRECATION_POLICY_URL}", ("metadata", "labels", SUPPORT_LABEL),
            subject="runtime"))
    found.extend(_replicated_jobs(runtime))
    return found


# ----------------------------------------------------------------------------- runtime lookup


def _not_found(trainjob: Obj) -> Diagnostic:
    """`ValidateObjects` when the GET of the runtime fails (or the runtime kind is unknown)."""
    key = wanted_key(trainjob)
    if isinstance(key, Diagnostic):
        return key
    if key.kind == "TrainingRuntime":
        resource, variant = "trainingruntimes", "trainingRuntime"
    else:
        resource, variant = "clustertrainingruntimes", "clusterTrainingRuntime"
    return error("TJC-WEBHOOK-RUNTIME-NOT-FOUND",
                 f'{resource}.trainer.kubeflow.org "{key.name}" not found: specified {variant} '
                 "must be created before the TrainJob is created", RUNTIME_REF)


def _is_deprecated(runtime: Obj) -> bool:
    """`IsSupportDeprecated`: the support label is exactly `deprecated`."""
    labels = _dict(_dict(runtime.get("metadata")).get("labels"))
    return labels.get(SUPPORT_LABEL) == "deprecated"


def _deprecated_reference(runtime: Obj) -> Diagnostic | None:
    """The warning for a TrainJob using a deprecated ClusterTrainingRuntime (upstream gives
    none for a namespaced TrainingRuntime)."""
    if runtime.get("kind") != "ClusterTrainingRuntime" or not _is_deprecated(runtime):
        return None
    name = _dict(runtime.get("metadata")).get("name", "")
    return Diagnostic(
        Severity.WARNING, "TJC-WEBHOOK-DEPRECATED-RUNTIME-REF",
        f'referenced ClusterTrainingRuntime "{name}" is deprecated and will be removed in a '
        f"future release of Kubeflow Trainer. See runtime deprecation policy: "
        f"{DEPRECATION_POLICY_URL}", RUNTIME_REF)


_TYPED: dict[int, tuple[Obj, Obj]] = {}


def _typed_spec(runtime: Obj) -> Obj:
    """A fresh copy of the runtime's JobSet spec after the typed round trip; the round trip
    runs once per runtime object (callers validate many TrainJobs against one runtime)."""
    cached = _TYPED.get(id(runtime))
    if cached is None or cached[0] is not runtime:
        if len(_TYPED) > 256:
            _TYPED.clear()
        template = _dict(_dict(runtime.get("spec")).get("template"))
        cached = (runtime, typed.jobset_spec(_dict(template.get("spec"))))
        _TYPED[id(runtime)] = cached
    return fast_copy(cached[1])  # type: ignore[no-any-return]


def _context(trainjob: Obj, runtime: Obj) -> tuple[Context | None, Diagnostic | None]:
    """`newRuntimeInfo`: the JobSet template after the runtime patches, as pod sets."""
    try:
        return build_context(trainjob, runtime, _typed_spec(runtime)), None
    except TjcError as exc:
        return None, exc.diagnostic


# ----------------------------------------------------------------------------- flux


def _flux(job: _Input) -> Iterator[Diagnostic]:
    """Flux `Validate`: numProcPerNode >= 1; no `flux-installer` init container in `node`."""
    flux = job.policy("mlPolicy", "flux")
    if flux is None or job.ctx is None:
        return
    trainer = job.trainer or {}
    npp = trainer.get("numProcPerNode", flux.get("numProcPerNode"))
    if isinstance(npp, int) and npp < 1:
        yield error("TJC-WEBHOOK-FLUX-NUM-PROC-PER-NODE",
                    f"numProcPerNode is {npp}: must be greater than or equal to 1 for Flux "
                    "TrainJob", ("spec", "trainer", "numProcPerNode"))
    for ps in job.ctx.pod_sets:
        if ps.name != NODE:
            continue
        for container in ps.pod_spec.get("initContainers") or []:
            if container.get("name") == FLUX_INSTALLER:
                subject, path = _init_container_source(job, NODE, FLUX_INSTALLER)
                yield error("TJC-WEBHOOK-FLUX-INSTALLER",
                            "initContainer 'flux-installer' is reserved; the Flux plugin adds "
                            "it, rename this one", path, subject=subject)


def _init_container_source(job: _Input, rjob_name: str, name: str) -> tuple[str, Path]:
    """Where an init container of a job comes from: the runtime template, else a patch."""
    for i, rjob in enumerate(_list(get_path(job.runtime, *RUNTIME_JOBS))):
        if rjob.get("name") != rjob_name:
            continue
        for k, container in enumerate(_list(get_path(rjob, *POD_SPEC, "initContainers"))):
            if container.get("name") == name:
                return "runtime", (*RUNTIME_JOBS, i, *POD_SPEC, "initContainers", k)
    for i, j, pjob in _patch_jobs(job.trainjob):
        if pjob.get("name") != rjob_name:
            continue
        for k, container in enumerate(_list(get_path(pjob, *POD_SPEC, "initContainers"))):
            if container.get("name") == name:
                return "trainjob", (*PATCHES, i, *PATCH_JOBS, j, *POD_SPEC, "initContainers", k)
    return "trainjob", ("spec", "trainer")


# ----------------------------------------------------------------------------- volcano


def _volcano(job: _Input) -> Iterator[Diagnostic]:
    """Volcano `Validate`: the propagated queue-name annotation, when present, is not empty.
    (The PriorityClass existence check needs a cluster and is skipped.)"""
    if job.policy("podGroupPolicy", "volcano") is None or job.ctx is None:
        return
    if job.ctx.annotations.get(VOLCANO_QUEUE, None) != "":
        return
    subject, path = _annotation_source(job, VOLCANO_QUEUE)
    yield error("TJC-WEBHOOK-VOLCANO-QUEUE",
                "volcano queue name must not be empty; set a queue name or drop the "
                f"{VOLCANO_QUEUE} annotation", path, subject=subject)


def _annotation_source(job: _Input, key: str) -> tuple[str, Path]:
    """The last runtime patch that sets a JobSet template annotation, else the runtime."""
    where: tuple[str, Path] = ("runtime", ("spec", "template", "metadata", "annotations", key))
    for i, patch in enumerate(_list(job.spec.get("runtimePatches"))):
        meta = get_path(patch, "trainingRuntimeSpec", "template", "metadata", "annotations")
        if isinstance(meta, dict) and key in meta:
            where = ("trainjob", (*PATCHES, i, "trainingRuntimeSpec", "template", "metadata",
                                  "annotations", key))
    return where


# ----------------------------------------------------------------------------- mpi


def _mpi(job: _Input) -> Iterator[Diagnostic]:
    """MPI `Validate`: runLauncherAsNode with 2+ nodes needs jobs `launcher` and `node`;
    reserved OMPI_* envs."""
    mpi = job.policy("mlPolicy", "mpi")
    trainer = job.trainer
    if mpi is None or trainer is None:
        return
    if trainer.get("numNodes", 1) >= 2 and mpi.get("runLauncherAsNode") is True and \
            (ctx := job.ctx) is not None and (
            ctx.pod_set_by_name(LAUNCHER) is None or ctx.pod_set_by_name(NODE) is None):
        yield error("TJC-WEBHOOK-MPI-LAUNCHER-AS-NODE",
                    "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does "
                    "not have either launcher and node", NUM_NODES)
    yield from _reserved_envs("TJC-WEBHOOK-MPI-RESERVED-ENV", trainer, MPI_RESERVED_ENVS)


def _reserved_envs(rule: str, trainer: Obj, reserved: frozenset[str]) -> Iterator[Diagnostic]:
    """One error at `spec.trainer.env` listing the reserved names used, sorted (Go's `%v`)."""
    names = sorted(reserved.intersection(str(e.get("name")) for e in _list(trainer.get("env"))))
    if names:
        yield error(rule, f"must not have reserved envs, invalid envs configured: "
                    f"[{' '.join(names)}]", TRAINER_ENV)


# ----------------------------------------------------------------------------- torch


def _torch(job: _Input) -> Iterator[Diagnostic]:
    """Torch `Validate`: envInjection targets exist; reserved PET_* envs; TorchTune rules."""
    torch = job.policy("mlPolicy", "torch")
    if torch is None:
        return
    if _dict(torch.get("envInjection")).get("targets") and job.ctx is not None:
        yield from _env_injection(job.ctx, torch)
    trainer = job.trainer
    if trainer is None:
        return
    yield from _reserved_envs("TJC-WEBHOOK-TORCH-RESERVED-ENV", trainer, TORCH_RESERVED_ENVS)
    if trainer.get("command") == TUNE_ENTRYPOINT and job.ctx is not None:
        yield from _torchtune(job.ctx, trainer)


def _env_injection(ctx: Context, torch: Obj) -> Iterator[Diagnostic]:
    """`validateEnvInjectionTargets`: every target container is in its pod set (regular
    containers, then init containers)."""
    for target in _list(_dict(torch.get("envInjection")).get("targets")):
        job_name = str(target.get("jobName", ""))
        for name in _strings(target.get("containerNames")):
            ps = ctx.pod_set_by_name(job_name)
            if ps is not None and (ps.container(name) is not None
                                   or ps.container(name, init=True) is not None):
                continue
            yield error("TJC-WEBHOOK-TORCH-ENV-INJECTION",
                        f"envInjection target podSet {_q(job_name)} container {_q(name)} not "
                        "found in runtime template", RUNTIME_REF)


def _torchtune(ctx: Context, trainer: Obj) -> Iterator[Diagnostic]:
    """`validateTorchTune`, with the config computed from numProcPerNode `auto` (no CPU
    conversion) and the GPU count of resourcesPerNode, else of the runtime's node."""
    ref = _dict(ctx.trainjob.get("spec", {}).get("runtimeRef"))
    model = model_name(str(ref.get("name", "")))
    if model not in TORCHTUNE_MODELS:
        yield error("TJC-WEBHOOK-TORCHTUNE-MODEL",
                    f"must have a supported pretrained model, invalid model configured: {model}",
                    RUNTIME_REF_NAME)
    num_nodes = trainer.get("numNodes", 1)
    if num_nodes > 1 and model != LLAMA_70B:
        yield error("TJC-WEBHOOK-TORCHTUNE-NUM-NODES", f"must be 1 for {model} model",
                    NUM_NODES)
    args = _strings(trainer.get("args"))
    npp: int | str = trainer.get("numProcPerNode", "auto")
    _, config = recipe_and_config(ctx, num_nodes, npp, gpu_count(node_resources(ctx)), args)
    yield from _qlora(model, config)
    if num_nodes > 1 and (is_lora(args) or is_qlora(args)):
        yield error("TJC-WEBHOOK-TORCHTUNE-LORA-MULTI-NODE",
                    "LoRA fine-tuning is not supported for multi-node training in TorchTune",
                    NUM_NODES)
    for i, arg in enumerate(args):
        key = arg.split("=", 1)[0]
        if key in IMMUTABLE_CONFIGS:
            yield error("TJC-WEBHOOK-TORCHTUNE-IMMUTABLE-ARG",
                        f"must not set immutable config {_q(key)} in trainer args; it is "
                        "managed by the runtime", ("spec", "trainer", "args", i))


def _qlora(model: str, config: str) -> Iterator[Diagnostic]:
    """QLoRA rules; `_qlora` also matches `_qlora_single_device` (upstream, §8-B14)."""
    if QLORA_SUFFIX not in config:
        return
    if model == QWEN_1_5B:
        yield error("TJC-WEBHOOK-TORCHTUNE-QLORA-MODEL", f"QLoRA is not supported for {model} "
                    "model", RUNTIME_REF_NAME)
    if QLORA_SINGLE_DEVICE_SUFFIX not in config and model in ("llama3_2/1B", "llama3_2/3B"):
        yield error("TJC-WEBHOOK-TORCHTUNE-QLORA-NUM-PROC",
                    f"must be auto or 1 for {model} model when using QLoRA",
                    ("spec", "trainer", "numProcPerNode"))
        yield error("TJC-WEBHOOK-TORCHTUNE-QLORA-RESOURCES",
                    f"must have gpu resource with value 1 for {model} model when using QLoRA",
                    ("spec", "trainer", "resourcesPerNode"))


# ----------------------------------------------------------------------------- jobset


def _jobset(job: _Input) -> Iterator[Diagnostic]:
    """JobSet `Validate`: initializer jobs (by job name), runtime patches."""
    initializer = _dict(job.spec.get("initializer"))
    if any(isinstance(initializer.get(k), dict) for k in ("dataset", "model")) \
            and job.ctx is not None:
        names = _container_names(job.ctx.spec)
        for key, name, config in (("dataset", DATASET_INITIALIZER, "datasetConfig"),
                                  ("model", MODEL_INITIALIZER, "modelConfig")):
            if isinstance(initializer.get(key), dict):
                yield from _initializer(job.ctx.spec, names, name, config)
    yield from _patches(job)


def _container_names(spec: Obj) -> dict[str, set[str]]:
    """Container and init container names per replicatedJob name."""
    out: dict[str, set[str]] = {}
    for rjob in _list(spec.get("replicatedJobs")):
        pod = _dict(get_path(rjob, *POD_SPEC))
        out[str(rjob.get("name", ""))] = {
            str(c.get("name")) for key in ("initContainers", "containers")
            for c in _list(pod.get(key))}
    return out


def _initializer(spec: Obj, names: dict[str, set[str]], name: str,
                 config: str) -> Iterator[Diagnostic]:
    """The job named `name`, its container `name`, and that container's `initializer` mount."""
    if name not in names:
        yield error("TJC-WEBHOOK-INITIALIZER-JOB",
                    f"must have {name} job when trainJob is configured with input {config}",
                    RUNTIME_REF)
    elif name not in names[name]:
        yield error("TJC-WEBHOOK-INITIALIZER-CONTAINER",
                    f"must have container with name - {name} in the {name} job", RUNTIME_REF)
    elif not _has_initializer_mount(spec, name):
        yield error("TJC-WEBHOOK-INITIALIZER-MOUNT",
                    f"must have volumeMount with name - {INITIALIZER_VOLUME} in container "
                    f"{name} of the {name} job", RUNTIME_REF)


def _has_initializer_mount(spec: Obj, name: str) -> bool:
    for rjob in _list(spec.get("replicatedJobs")):
        if rjob.get("name") != name:
            continue
        for container in _list(get_path(rjob, *POD_SPEC, "containers")):
            if container.get("name") == name and any(
                    m.get("name") == INITIALIZER_VOLUME for m in _list(
                        container.get("volumeMounts"))):
                return True
    return False


def _patches(job: _Input) -> Iterator[Diagnostic]:
    """Patch managers, and the jobs and containers patches name (against the runtime's own
    template; see the module docstring)."""
    names = _container_names(_dict(get_path(job.runtime, "spec", "template", "spec")))
    for i, patch in enumerate(_list(job.spec.get("runtimePatches"))):
        yield from _manager(str(patch.get("manager", "")), (*PATCHES, i, "manager"))
    for i, j, pjob in _patch_jobs(job.trainjob):
        path: Path = (*PATCHES, i, *PATCH_JOBS, j)
        rjob_name = str(pjob.get("name", ""))
        containers = names.get(rjob_name)
        pod = get_path(pjob, *POD_SPEC)
        if containers is None:
            yield _new_in_patch("TJC-QUIRK-PATCH-NEW-JOB", f"replicated job {_q(rjob_name)}",
                                "the runtime job template", (*path, "name"))
            # after the merge the new job holds exactly the patch's containers
            containers = {str(c.get("name", "")) for key in ("initContainers", "containers")
                          for c in _list(_dict(pod).get(key))}
        if isinstance(pod, dict):
            yield from _patch_containers(pod, containers, rjob_name, (*path, *POD_SPEC))


def _patch_jobs(trainjob: Obj) -> Iterator[tuple[int, int, Obj]]:
    """(patch index, job index, job patch) for every replicatedJob of every runtime patch."""
    for i, patch in enumerate(_list(get_path(trainjob, "spec", "runtimePatches"))):
        for j, pjob in enumerate(_list(get_path(patch, *PATCH_JOBS))):
            yield i, j, pjob


def _new_in_patch(rule: str, what: str, where: str, path: Path) -> Diagnostic:
    """A patch naming something the runtime does not have. Upstream's webhook means to reject
    it, but checks the template after the patches are merged in, where the name exists: the
    cluster accepts the TrainJob and the JobSet gets a job or container with only what the
    patch gives it (no image)."""
    return Diagnostic(Severity.WARNING, rule, f"{what} is not in {where}; upstream checks the "
                      "template after merging the patches, so the cluster accepts this and the "
                      "patch adds it with no image; name one that exists", path)


def _patch_containers(pod: Obj, containers: set[str], rjob_name: str,
                      path: Path) -> Iterator[Diagnostic]:
    for k, container in enumerate(_list(pod.get("initContainers"))):
        name = str(container.get("name", ""))
        if name not in containers:
            yield _new_in_patch("TJC-QUIRK-PATCH-NEW-INIT-CONTAINER", f"initContainer {_q(name)}",
                                f"the runtime job {rjob_name}", (*path, "initContainers", k))
    for k, container in enumerate(_list(pod.get("containers"))):
        name = str(container.get("name", ""))
        if name not in containers:
            yield _new_in_patch("TJC-QUIRK-PATCH-NEW-CONTAINER", f"container {_q(name)}",
                                f"the runtime job {rjob_name}", (*path, "containers", k))
        if container.get("env") and name in PATCH_ENV_CONTAINERS:
            yield error("TJC-WEBHOOK-PATCH-ENV",
                        f"must not have envs for the {DATASET_INITIALIZER}, {MODEL_INITIALIZER}, "
                        f"{NODE} containers; set them in spec.trainer.env or "
                        "spec.initializer instead", (*path, "containers", k, "env"))


def _manager(value: str, path: Path) -> Iterator[Diagnostic]:
    """`IsDomainPrefixedPath`: `<DNS-1123 subdomain>/<HTTP path>`."""
    rule = "TJC-WEBHOOK-PATCH-MANAGER"
    if not value:
        yield error(rule, "required value", path)
        return
    host, sep, rest = value.partition("/")
    if not sep or not host or not rest:
        yield error(rule, f"invalid value {_q(value)}: must be a domain-prefixed path (such as "
                    '"acme.io/foo")', path)
        return
    if len(host) > 253:
        yield error(rule, f"invalid value {_q(host)}: must be no more than 253 characters", path)
    if not re.fullmatch(_DNS1123_SUBDOMAIN, host):
        yield error(rule, f"invalid value {_q(host)}: {_SUBDOMAIN_MESSAGE}", path)
    if not re.fullmatch(_HTTP_PATH, rest):
        yield error(rule, f"invalid value {_q(rest)}: invalid path (regex used for validation "
                    f"is '{_HTTP_PATH}')", path)


def _patches_immutable(job: _Input, old: Obj) -> Iterator[Diagnostic]:
    """On update: runtimePatches may change only when the TrainJob is suspended before or
    after (patch `time` ignored: the defaulter restores it for unchanged patches). The
    active-JobSet check that follows upstream needs a cluster and is skipped."""
    old_doc = default_in_place("TrainJob", sanitize("TrainJob", old, subject="trainjob")[0])
    old_spec = _dict(old_doc.get("spec"))
    if _comparable_patches(old_spec) == _comparable_patches(job.spec):
        return
    if old_spec.get("suspend") is True or job.spec.get("suspend") is True:
        return
    yield error("TJC-WEBHOOK-PATCH-IMMUTABLE",
                "runtimePatches can only be modified when the TrainJob is suspended before or "
                "after the update", PATCHES)


def _comparable_patches(spec: Obj) -> Any:
    """The patches as `equality.Semantic` compares them: without `time`, with nulls and empty
    lists/maps dropped and quantities canonical."""
    patches = [{k: v for k, v in p.items() if k != "time"}
               for p in _list(spec.get("runtimePatches"))]
    canonicalize_quantities(patches, _dict(quantity_tree("TrainJob", "spec", "runtimePatches")))
    return _prune(patches)


def _prune(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


# ----------------------------------------------------------------------------- xgboost


def _xgboost(job: _Input) -> Iterator[Diagnostic]:
    """XGBoost `Validate`: one Forbidden per reserved DMLC_* env."""
    if job.policy("mlPolicy", "xgboost") is None or job.trainer is None:
        return
    for i, env in enumerate(_list(job.trainer.get("env"))):
        name = env.get("name")
        if name in XGBOOST_RESERVED_ENVS:
            yield error("TJC-WEBHOOK-XGBOOST-RESERVED-ENV",
                        f"{name} is reserved for the XGBoost runtime", (*TRAINER_ENV, i))


_TRAINJOB_RULES = (_flux, _volcano, _mpi, _torch, _jobset, _xgboost)


# ----------------------------------------------------------------------------- runtime


def _replicated_jobs(runtime: Obj) -> Iterator[Diagnostic]:
    """`validateReplicatedJobs`: jobs of a known ancestor have one replica and their container."""
    for i, rjob in enumerate(_list(get_path(runtime, *RUNTIME_JOBS))):
        labels = get_path(rjob, "template", "metadata", "labels")
        ancestor = labels.get(ANCESTOR_LABEL) if isinstance(labels, dict) else None
        if ancestor not in ANCESTOR_CONTAINERS:
            continue
        path: Path = (*RUNTIME_JOBS, i)
        replicas = rjob.get("replicas", 1)
        if replicas != 1:
            yield error("TJC-WEBHOOK-RUNTIME-REPLICAS",
                        f"replicas is {replicas}: always must be 1", (*path, "replicas"),
                        subject="runtime")
        wanted = ANCESTOR_CONTAINERS[ancestor]
        if not any(c.get("name") == wanted for c in _list(get_path(rjob, *POD_SPEC, "containers"))):
            yield error("TJC-WEBHOOK-RUNTIME-CONTAINER",
                        f"must contain the required container for the ancestor: {ancestor} "
                        f"(a container named {wanted})", (*path, *POD_SPEC, "containers"),
                        subject="runtime")


# ----------------------------------------------------------------------------- helpers


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _q(value: str) -> str:
    """Go's `%q` for the strings these messages quote."""
    return json.dumps(value, ensure_ascii=False)
