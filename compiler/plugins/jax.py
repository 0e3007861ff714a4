"""JAX (reference §3.4, KEP-2442): the jax.distributed environment for the trainer pods.

Active when `mlPolicy.jax` is set. Sets the trainer count from numNodes and, only when the
TrainJob has `spec.trainer`, upserts JAX_NUM_PROCESSES, JAX_PROCESS_ID (completion index) and
JAX_COORDINATOR_ADDRESS `<tj>-node-0-0.<tj>:29500`, then port 29500. It does not upsert
`trainer.env` (the JobSet builder appends it later, so user env lands after these).
"""

from __future__ import annotations

from compiler.context import Context
from compiler.plugins.base import (
    TRAINER_PORT,
    PluginResult,
    PluginSpec,
    completion_index_env,
    ml_policy_has,
    node_zero_host,
    trainer_env_and_port,
)


def active(ctx: Context) -> bool:
    """Only for runtimes whose mlPolicy sets jax."""
    return ml_policy_has(ctx, "jax")


def enforce(ctx: Context) -> PluginResult:
    """Count from numNodes; JAX env and port on the trainer `node` container."""
    return trainer_env_and_port(ctx, lambda count: (
        {"name": "JAX_NUM_PROCESSES", "value": str(count)},
        completion_index_env("JAX_PROCESS_ID"),
        {"name": "JAX_COORDINATOR_ADDRESS", "value": f"{node_zero_host(ctx)}:{TRAINER_PORT}"},
    ))


PLUGIN = PluginSpec(
    name="jax",
    policy="mlPolicy.jax",
    active=active,
    enforce=enforce,
    provides=frozenset({"pod-counts", "framework-env", "trainer-port"}),
)
