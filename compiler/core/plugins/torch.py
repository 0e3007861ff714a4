"""Torch (reference §3.2): torchrun's PET_* environment, and TorchTune's command.

Active when `mlPolicy.torch` is set. Sets the trainer count from numNodes; when the TrainJob has
`spec.trainer`, upserts `trainer.env`, then PET_NNODES, PET_NPROC_PER_NODE (`auto` with GPUs,
else the CPU count rounded up, or the TrainJob's numProcPerNode) and PET_NODE_RANK, then either
PET_MASTER_ADDR/PORT or, for `command: [tune, run]`, TorchTune's rendezvous, recipe, config and
the runtime's immutable overrides appended to the command; then port 29500. `envInjection`
targets get the PET and master envs even without `spec.trainer`.

Admission (upstream's torch `Validate`): envInjection targets exist, the PET_* names are
reserved, and TorchTune's model, node count, QLoRA and immutable-config rules. For
`tjc run --local`, `torchrun` runs the given interpreter's `torch.distributed.run`.
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler.common.diagnostics import Diagnostic, error
from compiler.common.errors import CompileError
from compiler.common.jsondata import Obj
from compiler.core.context import ANCESTOR_LABEL, NODE, TRAINER, Context
from compiler.core.plugins.base import (
    TRAINER_PORT,
    Edit,
    PluginResult,
    PluginSpec,
    SetTrainerCommand,
    UpsertEnv,
    UpsertPorts,
    completion_index_env,
    ml_policy_has,
    node_zero_host,
    trainer_count,
)
from compiler.core.plugins.checks import (
    NUM_NODES,
    RUNTIME_REF,
    RUNTIME_REF_NAME,
    Admission,
    as_dict,
    as_list,
    go_quote,
    job_pods,
    pod_container,
    reserved_envs,
    strings,
)
from compiler.core.plugins.hooks import (
    CustomValidation,
    GpuEffect,
    InjectedEnvs,
    Launcher,
    LaunchSite,
    LocalLaunch,
    TrainerEnvs,
    python_script,
)
from compiler.core.resources import cpu_count, gpu_count, int32, node_resources
from compiler.core.upsert import env_vars

TUNE_ENTRYPOINT = ["tune", "run"]
ENV_NAMES = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR",
             "PET_MASTER_PORT")
RESERVED_ENVS = frozenset(ENV_NAMES)
TORCHTUNE_MODELS = frozenset({"llama3_2/1B", "llama3_2/3B", "llama3_3/70B", "qwen2_5/1.5B"})
LLAMA_70B, QWEN_1_5B = "llama3_3/70B", "qwen2_5/1.5B"
QLORA_SUFFIX, QLORA_SINGLE_DEVICE_SUFFIX = "_qlora", "_qlora_single_device"
NUM_PROC_NAMES = ("auto", "cpu", "gpu")  # v2.1's numProcPerNode strings
IMMUTABLE_CONFIGS = frozenset({"output_dir", "tokenizer.path", "checkpointer.checkpoint_dir",
                               "tokenizer.merges_file"})


def active(ctx: Context) -> bool:
    """Only for runtimes whose mlPolicy sets torch."""
    return ml_policy_has(ctx, "torch")


def num_proc_per_node(ctx: Context) -> tuple[int | str, int]:
    """PET_NPROC_PER_NODE (`auto`, v2.1's `gpu`, or an int) and the GPU count it was decided
    from: the TrainJob's numProcPerNode, else the torch policy's (v2.1: its CRD's only), else
    `auto`; `auto` without GPUs, and v2.1's `cpu`, become the CPU count."""
    trainer = ctx.trainer or {}
    policy = (ctx.ml_policy or {}).get("torch") or {}
    own = policy.get("numProcPerNode", "auto") if ctx.release.num_proc_strings else "auto"
    npp: int | str = trainer.get("numProcPerNode", own)
    res = node_resources(ctx)
    gpus = gpu_count(res)
    if npp == "cpu" or (npp == "auto" and gpus == 0):
        npp = int32(max(1, cpu_count(res)))
    return npp, gpus


def enforce(ctx: Context) -> PluginResult:
    """Counts, PET envs, master address or TorchTune command, port, envInjection."""
    trainer = ctx.trainer
    ps, count, edits = trainer_count(ctx)
    trained = trainer is not None and ps is not None and ps.container(NODE) is not None
    npp, gpus = num_proc_per_node(ctx)
    pet = _pet_envs(count, npp)
    master = ({"name": "PET_MASTER_ADDR", "value": node_zero_host(ctx)},
              {"name": "PET_MASTER_PORT", "value": str(TRAINER_PORT)})
    if trained and ps is not None and trainer is not None:
        edits.append(UpsertEnv(ps.index, NODE, tuple(env_vars(trainer.get("env")))))
        edits.append(UpsertEnv(ps.index, NODE, pet))
        if trainer.get("command") != TUNE_ENTRYPOINT:
            edits.append(UpsertEnv(ps.index, NODE, master))
        else:
            edits.append(_tune_edit(ctx, count, npp, gpus))
        edits.append(UpsertPorts(ps.index, NODE, ({"containerPort": TRAINER_PORT},)))
    edits.extend(_env_injection(ctx, pet + master))
    return PluginResult(edits=tuple(edits))


def _tune_edit(ctx: Context, count: int, npp: int | str, gpus: int) -> Edit:
    return SetTrainerCommand(tuple(_tune_command(ctx, count, npp, gpus)),
                             how="extended by plugin torch (TorchTune)")


def _pet_envs(count: int, npp: int | str) -> tuple[Obj, ...]:
    return ({"name": "PET_NNODES", "value": str(count)},
            {"name": "PET_NPROC_PER_NODE", "value": str(npp)},
            completion_index_env("PET_NODE_RANK"))


def _env_injection(ctx: Context, envs: tuple[Obj, ...]) -> list[Edit]:
    """`envInjection`: the PET and master envs for extra containers, found by job name."""
    torch = (ctx.ml_policy or {}).get("torch") or {}
    edits: list[Edit] = []
    for target in (torch.get("envInjection") or {}).get("targets") or []:
        job = target.get("jobName", "")
        for name in target.get("containerNames") or []:
            ps = ctx.pod_set_by_name(job)
            init = ps is not None and ps.container(name) is None and \
                ps.container(name, init=True) is not None
            if ps is None or (ps.container(name) is None and not init):
                raise CompileError(error(
                    "TJC-TORCH-ENV-INJECTION",
                    f'envInjection target podSet "{job}" container "{name}" not found in '
                    "runtime template", ("spec", "mlPolicy", "torch", "envInjection"),
                    subject="runtime"))
            edits.append(UpsertEnv(ps.index, name, envs, init=init))
    return edits


def _tune_command(ctx: Context, count: int, npp: int | str, gpus: int) -> list[str]:
    """`tune run` plus rendezvous (multi-node or multi-device), recipe, config, overrides."""
    trainer = ctx.trainer or {}
    command = list(TUNE_ENTRYPOINT)
    multi_device = (isinstance(npp, int) and npp > 1) or (isinstance(npp, str) and gpus > 1)
    if count > 1 or multi_device:
        command.append(f"--rdzv_endpoint={node_zero_host(ctx)}:{TRAINER_PORT}")
    recipe, config = recipe_and_config(ctx, count, npp, gpus, trainer.get("args") or [])
    command += [recipe, "--config", config]
    return command + _runtime_overrides(ctx)


def model_name(runtime_name: str) -> str:
    """`torchtune-llama3.2-1b` -> `llama3_2/1B`; anything without three dash parts -> ""."""
    fields = runtime_name.split("-")
    if len(fields) != 3:
        return ""
    return f"{fields[1].replace('.', '_')}/{fields[2].upper()}"


def _bool_arg(args: list[str], key: str, valued: bool = True) -> bool:
    """Whether an argument names `key` with the value `true` (any case); before v2.3
    (`valued` False, `Release.torchtune_bool_args`) whether any argument mentions it."""
    if not valued:
        return any(key in arg for arg in args)
    for arg in args:
        name, sep, value = arg.partition("=")
        if sep and key in name and value.strip().lower() == "true":
            return True
    return False


def is_qlora(args: list[str], valued: bool = True) -> bool:
    """QLoRA: `model.quantize_base=true` unless `model.use_dora=true` (before v2.3: any
    `quantize_base` argument unless one mentions `use_dora`)."""
    return not _bool_arg(args, "model.use_dora", valued) and \
        _bool_arg(args, "model.quantize_base", valued)


def is_lora(args: list[str]) -> bool:
    """LoRA: any argument mentioning `model.lora_attn_modules`."""
    return any("model.lora_attn_modules" in arg for arg in args)


def recipe_and_config(ctx: Context, count: int, npp: int | str, gpus: int,
                      args: list[str]) -> tuple[str, str]:
    """TorchTune's recipe and config name (`getRecipeAndConfig`)."""
    recipe, suffix = "full_finetune_distributed", "_full"
    qlora = is_qlora(args, ctx.release.torchtune_bool_args)
    if count == 1 and (npp == 1 or gpus == 1):
        if qlora:
            recipe, suffix = "lora_finetune_single_device", "_qlora_single_device"
        elif is_lora(args):
            recipe, suffix = "lora_finetune_single_device", "_lora_single_device"
        else:
            recipe, suffix = "full_finetune_single_device", "_full_single_device"
    elif count == 1 and qlora:
        recipe, suffix = "lora_finetune_distributed", "_qlora"
    elif count == 1 and is_lora(args):
        recipe, suffix = "lora_finetune_distributed", "_lora"
    elif count > 1:
        suffix = "_full_multinode"
    ref = ctx.trainjob.get("spec", {}).get("runtimeRef") or {}
    return recipe, model_name(str(ref.get("name", ""))) + suffix


def _runtime_overrides(ctx: Context) -> list[str]:
    """The runtime trainer `node` commands whose key is one of TorchTune's immutable configs."""
    out: list[str] = []
    for rjob in ctx.spec.get("replicatedJobs") or []:
        labels = rjob["template"].get("metadata", {}).get("labels") or {}
        if labels.get(ANCESTOR_LABEL) != TRAINER:
            continue
        for container in rjob["template"]["spec"]["template"]["spec"].get("containers") or []:
            if container.get("name") == NODE:
                out += [c for c in container.get("command") or []
                        if c.split("=")[0] in IMMUTABLE_CONFIGS]
    return out


# ----------------------------------------------------------------------------- admission


def validate(job: Admission) -> Iterator[Diagnostic]:
    """Torch `Validate`: envInjection targets exist; reserved PET_* envs; TorchTune rules."""
    torch = job.policy("mlPolicy", "torch")
    if torch is None:
        return
    if as_dict(torch.get("envInjection")).get("targets") \
            and (spec := job.template_spec()) is not None:
        yield from _injection_targets(spec, torch)
    trainer = job.trainer
    if trainer is None:
        return
    if job.release.torch_checks_need_num_proc and "numProcPerNode" not in trainer:
        return  # v2.1 checks nothing more without it
    if job.release.num_proc_strings:
        yield from _num_proc_strings(trainer)
    yield from reserved_envs("TJC-WEBHOOK-TORCH-RESERVED-ENV", trainer, RESERVED_ENVS)
    if trainer.get("command") == TUNE_ENTRYPOINT and job.ctx is not None:
        if job.release.torch_checks_need_num_proc and \
                not isinstance(trainer.get("numNodes"), int):  # v2.1 reads it unchecked
            yield error("TJC-WEBHOOK-TORCHTUNE-NO-NUM-NODES", "TorchTune's check reads "
                        f"spec.trainer.numNodes: without it Kubeflow Trainer "
                        f"{job.release.version}'s webhook fails and the TrainJob is refused; "
                        "set numNodes", ("spec", "trainer"))
            return
        yield from _torchtune(job.ctx, trainer)


def _num_proc_strings(trainer: Obj) -> Iterator[Diagnostic]:
    """v2.1's numProcPerNode is an int or one of `auto`, `cpu`, `gpu`."""
    npp = trainer.get("numProcPerNode")
    if isinstance(npp, str) and npp not in NUM_PROC_NAMES:
        yield error("TJC-WEBHOOK-TORCH-NUM-PROC-PER-NODE", f"numProcPerNode is {go_quote(npp)}: "
                    f"must have an int value or [{' '.join(NUM_PROC_NAMES)}]",
                    ("spec", "trainer", "numProcPerNode"))


def _injection_targets(spec: Obj, torch: Obj) -> Iterator[Diagnostic]:
    """`validateEnvInjectionTargets`: every target container is in its pod set (the first
    job of that name; regular containers, then init containers)."""
    pods: dict[str, Obj] = {}
    for job_name, pod_spec in job_pods(spec):
        pods.setdefault(job_name, pod_spec)
    for target in as_list(as_dict(torch.get("envInjection")).get("targets")):
        job_name = str(target.get("jobName", ""))
        for name in strings(target.get("containerNames")):
            pod = pods.get(job_name)
            if pod is not None and (pod_container(pod, name) is not None
                                    or pod_container(pod, name, init=True) is not None):
                continue
            yield error("TJC-WEBHOOK-TORCH-ENV-INJECTION",
                        f"envInjection target podSet {go_quote(job_name)} container "
                        f"{go_quote(name)} not found in runtime template", RUNTIME_REF)


def _torchtune(ctx: Context, trainer: Obj) -> Iterator[Diagnostic]:
    """`validateTorchTune`, with the config computed from numProcPerNode `auto` (no CPU
    conversion) and the GPU count of resourcesPerNode, else of the runtime's node."""
    ref = as_dict(ctx.trainjob.get("spec", {}).get("runtimeRef"))
    model = model_name(str(ref.get("name", "")))
    if model not in TORCHTUNE_MODELS:
        yield error("TJC-WEBHOOK-TORCHTUNE-MODEL",
                    f"must have a supported pretrained model, invalid model configured: {model}",
                    RUNTIME_REF_NAME)
    num_nodes = trainer.get("numNodes", 1)
    if num_nodes > 1 and model != LLAMA_70B:
        yield error("TJC-WEBHOOK-TORCHTUNE-NUM-NODES", f"must be 1 for {model} model",
                    NUM_NODES)
    args = strings(trainer.get("args"))
    npp: int | str = trainer.get("numProcPerNode", "auto")
    _, config = recipe_and_config(ctx, num_nodes, npp, gpu_count(node_resources(ctx)), args)
    yield from _qlora(model, config)
    if ctx.release.torchtune_strict_args:  # from v2.3
        yield from _strict_args(num_nodes, args, ctx.release.torchtune_bool_args)


def _strict_args(num_nodes: int, args: list[str], valued: bool) -> Iterator[Diagnostic]:
    """v2.3's TorchTune checks: no LoRA on many nodes; no immutable config in the args."""
    if num_nodes > 1 and (is_lora(args) or is_qlora(args, valued)):
        yield error("TJC-WEBHOOK-TORCHTUNE-LORA-MULTI-NODE",
                    "LoRA fine-tuning is not supported for multi-node training in TorchTune",
                    NUM_NODES)
    for i, arg in enumerate(args):
        key = arg.split("=", 1)[0]
        if key in IMMUTABLE_CONFIGS:
            yield error("TJC-WEBHOOK-TORCHTUNE-IMMUTABLE-ARG",
                        f"must not set immutable config {go_quote(key)} in trainer args; it is "
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


def gpu_effect(trainer: Obj, policy: Obj, gpus: int) -> str | None:
    """What counting no GPUs changes for torch (§8-B4)."""
    if trainer.get("command") == TUNE_ENTRYPOINT:
        return "TorchTune's recipe, config and rendezvous are chosen as for a node without GPUs"
    if "numProcPerNode" not in trainer:
        return "PET_NPROC_PER_NODE becomes the node's CPU count instead of auto"
    return None


class Hooks(CustomValidation, GpuEffect, TrainerEnvs, LocalLaunch):
    """Torch's hooks: admission, the GPU effect, the PET env, `torchrun` for local runs."""

    validate = staticmethod(validate)
    gpu_effect = staticmethod(gpu_effect)

    def trainer_envs(self) -> InjectedEnvs:
        """The PET_* names; envInjection targets get them regardless."""
        return InjectedEnvs(ENV_NAMES, " (envInjection targets still get them)")

    def local_launch(self, site: LaunchSite) -> Launcher:
        """`torchrun` is the interpreter's `torch.distributed.run`."""
        return Launcher(programs={"torchrun": python_script(site.python, "-m",
                                                            "torch.distributed.run")})


PLUGIN = PluginSpec(
    name="torch",
    policy="mlPolicy.torch",
    active=active,
    enforce=enforce,
    provides=frozenset({"pod-counts", "trainer-env", "framework-env", "trainer-port"}),
    hooks=(Hooks(),),
)
