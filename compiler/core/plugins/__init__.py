"""The plugin registry: one literal tuple, in the order ties are broken.

mlPolicy plugins first (mpi, plainml, torch, jax, xgboost, flux), then the podGroupPolicy plugins,
then the JobSet builder; the graph (`compiler.core.plugins.graph`) computes the real order from the
facts each plugin requires and provides. No import-time registration.
"""

from __future__ import annotations

from compiler.core.plugins import (
    coscheduling,
    flux,
    jax,
    jobset,
    mpi,
    plainml,
    torch,
    volcano,
    xgboost,
)
from compiler.core.plugins.base import PluginSpec

REGISTRY: tuple[PluginSpec, ...] = (
    mpi.PLUGIN,
    plainml.PLUGIN,
    torch.PLUGIN,
    jax.PLUGIN,
    xgboost.PLUGIN,
    flux.PLUGIN,
    coscheduling.PLUGIN,
    volcano.PLUGIN,
    jobset.PLUGIN,
)
