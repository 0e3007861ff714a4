"""PlainML (reference §3.1): trainer count and `trainer.env` for runtimes without a framework.

Active unless the mlPolicy sets torch, mpi or jax, so it also runs for XGBoost and Flux
runtimes and for runtimes with no mlPolicy at all.
"""

from __future__ import annotations

from compiler.core.context import NODE, Context
from compiler.core.plugins.base import (
    PluginResult,
    PluginSpec,
    UpsertEnv,
    ml_policy_has,
    trainer_count,
)
from compiler.core.upsert import env_vars


def active(ctx: Context) -> bool:
    """Upstream skips only torch, mpi and jax policies."""
    return not any(ml_policy_has(ctx, key) for key in ("torch", "mpi", "jax"))


def enforce(ctx: Context) -> PluginResult:
    """Set the trainer count from numNodes and upsert trainer.env into container `node`."""
    trainer = ctx.trainer
    ps, _, edits = trainer_count(ctx)
    if trainer is not None and ps is not None and ps.container(NODE) is not None:
        edits.append(UpsertEnv(ps.index, NODE, tuple(env_vars(trainer.get("env")))))
    return PluginResult(edits=tuple(edits))


PLUGIN = PluginSpec(
    name="plainml",
    policy="mlPolicy (none, xgboost, flux)",
    active=active,
    enforce=enforce,
    provides=frozenset({"pod-counts", "trainer-env"}),
)
