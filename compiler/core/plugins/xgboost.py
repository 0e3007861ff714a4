"""XGBoost (reference §3.5): the DMLC tracker environment for the trainer pods.

Active when `mlPolicy.xgboost` is set; PlainML also runs for these runtimes and upserts
`trainer.env` first (registry order: plainml before xgboost). Sets the trainer count from
numNodes and, when the TrainJob has `spec.trainer`, upserts DMLC_TRACKER_URI, DMLC_TRACKER_PORT,
DMLC_TASK_ID (completion index) and DMLC_NUM_WORKER = nodes x workers per node (the GPU count,
else 1), then port 29500.

Admission (upstream's XGBoost `Validate`): the DMLC_* names are reserved, one error each.
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler.common.diagnostics import Diagnostic, error
from compiler.common.jsondata import Obj
from compiler.core.context import Context
from compiler.core.plugins.base import (
    TRAINER_PORT,
    PluginResult,
    PluginSpec,
    completion_index_env,
    ml_policy_has,
    node_zero_host,
    trainer_env_and_port,
)
from compiler.core.plugins.checks import TRAINER_ENV, Admission, as_list
from compiler.core.plugins.hooks import CustomValidation, GpuEffect, InjectedEnvs, TrainerEnvs
from compiler.core.resources import gpu_count, int32, node_resources

ENV_NAMES = ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER")


def active(ctx: Context) -> bool:
    """Only for runtimes whose mlPolicy sets xgboost."""
    return ml_policy_has(ctx, "xgboost")


def enforce(ctx: Context) -> PluginResult:
    """Count from numNodes; DMLC env and port on the trainer `node` container."""
    def envs(count: int) -> tuple[Obj, ...]:
        workers = int32(gpu_count(node_resources(ctx))) or 1
        return (
            {"name": "DMLC_TRACKER_URI", "value": node_zero_host(ctx)},
            {"name": "DMLC_TRACKER_PORT", "value": str(TRAINER_PORT)},
            completion_index_env("DMLC_TASK_ID"),
            {"name": "DMLC_NUM_WORKER", "value": str(int32(count * workers))},
        )

    return trainer_env_and_port(ctx, envs)


def validate(job: Admission) -> Iterator[Diagnostic]:
    """XGBoost `Validate`: one Forbidden per reserved DMLC_* env."""
    if job.policy("mlPolicy", "xgboost") is None or job.trainer is None:
        return
    for i, env in enumerate(as_list(job.trainer.get("env"))):
        name = env.get("name")
        if name in ENV_NAMES:
            yield error("TJC-WEBHOOK-XGBOOST-RESERVED-ENV",
                        f"{name} is reserved for the XGBoost runtime", (*TRAINER_ENV, i))


def gpu_effect(trainer: Obj, policy: Obj, gpus: int) -> str | None:
    """What counting no GPUs changes for XGBoost (§8-B4)."""
    return "DMLC_NUM_WORKER counts one worker per node instead of one per GPU" if gpus > 1 \
        else None


class Hooks(CustomValidation, GpuEffect, TrainerEnvs):
    """XGBoost's hooks: admission, the GPU effect, the DMLC env."""

    validate = staticmethod(validate)
    gpu_effect = staticmethod(gpu_effect)

    def trainer_envs(self) -> InjectedEnvs:
        """The DMLC_* names."""
        return InjectedEnvs(ENV_NAMES)


PLUGIN = PluginSpec(
    name="xgboost",
    policy="mlPolicy.xgboost",
    active=active,
    enforce=enforce,
    provides=frozenset({"pod-counts", "framework-env", "trainer-port"}),
    hooks=(Hooks(),),
)
