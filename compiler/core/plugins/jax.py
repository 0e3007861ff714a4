"""JAX (reference §3.4, KEP-2442): the jax.distributed environment for the trainer pods.

Active when `mlPolicy.jax` is set. Sets the trainer count from numNodes and, only when the
TrainJob has `spec.trainer`, upserts JAX_NUM_PROCESSES, JAX_PROCESS_ID (completion index) and
JAX_COORDINATOR_ADDRESS `<tj>-node-0-0.<tj>:29500`, then port 29500. It does not upsert
`trainer.env` (the JobSet builder appends it later, so user env lands after these).

JAX reserves no env names (upstream has no JAX `Validate`); a TrainJob env of one of these
names replaces the plugin's value, which `tjc validate` warns about (§8-B11).
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler.common.diagnostics import Diagnostic, error
from compiler.common.errors import CompileError
from compiler.common.jsondata import Obj
from compiler.core.context import ANCESTOR_LABEL, TRAINER, Context
from compiler.core.plugins.base import (
    TRAINER_PORT,
    PluginResult,
    PluginSpec,
    completion_index_env,
    ml_policy_has,
    node_zero_host,
    trainer_env_and_port,
)
from compiler.core.plugins.checks import as_list, quirk, runtime_policy, trainer_of
from compiler.core.plugins.hooks import InjectedEnvs, Quirks, TrainerEnvs

ENV_NAMES = ("JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "JAX_COORDINATOR_ADDRESS")


def active(ctx: Context) -> bool:
    """Only for runtimes whose mlPolicy sets jax."""
    return ml_policy_has(ctx, "jax")


def enforce(ctx: Context) -> PluginResult:
    """Count from numNodes; JAX env and port on the trainer `node` container. v2.2's plugin
    reads the trainer PodSet's count before it checks there is one
    (`Release.jax_trainer_job_required`): without a trainer job its reconcile fails."""
    if ctx.release.jax_trainer_job_required and ctx.pod_set_by_ancestor(TRAINER) is None:
        raise CompileError(error(
            "TJC-JAX-NO-TRAINER-JOB", "the runtime has no replicated job labelled "
            f"{ANCESTOR_LABEL}: {TRAINER}; Kubeflow Trainer {ctx.release.version}'s JAX plugin "
            "dereferences that job's pod set and its controller creates nothing",
            ("spec", "runtimeRef")))
    return trainer_env_and_port(ctx, lambda count: (
        {"name": "JAX_NUM_PROCESSES", "value": str(count)},
        completion_index_env("JAX_PROCESS_ID"),
        {"name": "JAX_COORDINATOR_ADDRESS", "value": f"{node_zero_host(ctx)}:{TRAINER_PORT}"},
    ))


def quirks(trainjob: Obj, runtime: Obj) -> Iterator[Diagnostic]:
    """§8-B11: JAX reserves no env names, and trainer.env is upserted after the JAX envs."""
    trainer = trainer_of(trainjob)
    if trainer is None or runtime_policy(runtime, "mlPolicy", "jax") is None:
        return
    for i, env in enumerate(as_list(trainer.get("env"))):
        name = env.get("name")
        if name in ENV_NAMES:
            yield quirk(
                "TJC-QUIRK-JAX-ENV-OVERRIDE",
                f"{name} replaces the value the JAX plugin injects: upstream reserves no JAX_* "
                "names and applies spec.trainer.env after its own, so jax.distributed gets "
                "this value; remove it unless you mean to override it",
                ("spec", "trainer", "env", i))


class Hooks(Quirks, TrainerEnvs):
    """JAX's hooks: its quirk, the JAX env."""

    quirks = staticmethod(quirks)

    def trainer_envs(self) -> InjectedEnvs:
        """The JAX_* names."""
        return InjectedEnvs(ENV_NAMES)


PLUGIN = PluginSpec(
    name="jax",
    policy="mlPolicy.jax",
    active=active,
    enforce=enforce,
    provides=frozenset({"pod-counts", "framework-env", "trainer-port"}),
    hooks=(Hooks(),),
)
