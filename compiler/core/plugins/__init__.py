"""The plugin registry: one literal tuple, in the order ties are broken.

mlPolicy plugins first (mpi, plainml, torch, jax, xgboost, flux), then the podGroupPolicy plugins,
then the JobSet builder; the graph (`compiler.core.plugins.graph`) computes the real order from the
facts each plugin requires and provides. No import-time registration: a framework is added by
one line here (README, "Adding a plugin").

Everything outside this package reads the registry through `registry()` and the plugins' hooks
through `hooked(Hook)` (`compiler.core.plugins.hooks`), at call time: a module that imported the
tuple itself would keep the registry it saw first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

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

H = TypeVar("H")
# hook protocol -> (the registry it was found in, its implementations there)
_FOUND: dict[Any, tuple[tuple[PluginSpec, ...], tuple[tuple[PluginSpec, Any], ...]]] = {}


def registry() -> tuple[PluginSpec, ...]:
    """Every plugin, in registry order."""
    return REGISTRY


def hooked(hook: Callable[..., H]) -> tuple[tuple[PluginSpec, H], ...]:
    """Each plugin's implementation of `hook` (a protocol of `compiler.core.plugins.hooks`)
    with its plugin, in registry order; looked up once per registry. (`hook` is typed as a
    callable because mypy accepts no protocol where a `type[...]` is expected.)"""
    found = _FOUND.get(hook)
    if found is None or found[0] is not REGISTRY:
        kind = cast(type, hook)
        found = (REGISTRY, tuple((plugin, impl) for plugin in REGISTRY
                                 for impl in plugin.hooks if isinstance(impl, kind)))
        _FOUND[hook] = found
    return cast(tuple[tuple[PluginSpec, H], ...], found[1])
