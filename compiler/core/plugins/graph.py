"""Order the active plugins from what they require and provide (networkx).

An edge runs from every provider of a fact to every plugin that requires it (or orders itself
`after` it). Ties break by position in the given sequence (registry order), so the order is
deterministic. A cycle or a required fact no active plugin provides is a `PluginGraphError`
naming every plugin involved. Called by `PreparedRuntime.plugins` (which keeps the order of
its runtime's plugins in memory) and `tjc explain`; reads nothing but the start-up cache.

networkx is the one source of the order, but importing it costs more start-up than a one-file
`tjc validate` may spend, so the order it gives a set of plugins is kept in the start-up cache
(`compiler.common.diskcache`, area `plugin-order`), named by the digest of every plugin's
declaration in sequence and of this module's file: networkx is imported on a miss only. An
entry that is not an order of exactly the given plugins counts as a miss; an error is never
stored (it is computed again, with its message, every run).
"""

from __future__ import annotations

import marshal
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx

from compiler.common import diskcache
from compiler.common.diagnostics import error
from compiler.common.errors import PluginGraphError
from compiler.core.plugins.base import PluginSpec

CACHE_AREA = "plugin-order"


def build_graph(plugins: Sequence[PluginSpec]) -> nx.DiGraph:
    """The dependency graph of the given plugins, nodes in registry order. (networkx is
    imported here, not at module load: it costs a tenth of a second of start-up.)"""
    import networkx as nx

    graph = nx.DiGraph()
    for index, plugin in enumerate(plugins):
        graph.add_node(plugin.name, index=index)
    for consumer in plugins:
        for fact in sorted(consumer.requires | consumer.after):
            providers = [p.name for p in plugins if fact in p.provides and p is not consumer]
            if not providers and fact in consumer.requires:
                raise PluginGraphError(error(
                    "TJC-PLUGIN-GRAPH",
                    f"plugin {consumer.name} requires {fact!r} but no active plugin provides it"))
            for provider in providers:
                if graph.has_edge(provider, consumer.name):
                    graph.edges[provider, consumer.name]["facts"].append(fact)
                else:
                    graph.add_edge(provider, consumer.name, facts=[fact])
    return graph


def plugin_order(plugins: Sequence[PluginSpec]) -> list[PluginSpec]:
    """Topological order with ties broken by position in `plugins`: from the start-up cache,
    or from networkx (and then stored)."""
    given = tuple(plugins)
    name = cache_name(given)
    order = _decode(diskcache.read(CACHE_AREA, name), given)
    if order is None:
        order = _networkx_order(given)
        diskcache.write(CACHE_AREA, name, marshal.dumps(tuple(p.name for p in order)))
    return list(order)


def cache_name(plugins: Sequence[PluginSpec]) -> str:
    """The cache entry of a sequence of plugins: what the order depends on, namely each
    plugin's name and facts in sequence, and the rule that orders them (this file)."""
    return diskcache.key(CACHE_AREA, diskcache.file_stamp(__file__), *(repr((
        p.name, sorted(p.requires), sorted(p.provides), sorted(p.after))) for p in plugins))


def _decode(raw: bytes | None, plugins: tuple[PluginSpec, ...]
            ) -> tuple[PluginSpec, ...] | None:
    """The stored order, if it names each of the given plugins exactly once."""
    try:
        names = marshal.loads(raw) if raw is not None else None
    except (EOFError, ValueError, TypeError):
        return None
    by_name = {p.name: p for p in plugins}
    if not (isinstance(names, tuple) and all(isinstance(n, str) for n in names)
            and len(names) == len(plugins) == len(by_name) and set(names) == set(by_name)):
        return None
    return tuple(by_name[n] for n in names)


def _networkx_order(plugins: tuple[PluginSpec, ...]) -> tuple[PluginSpec, ...]:
    import networkx as nx

    graph = build_graph(plugins)
    by_name = {p.name: p for p in plugins}
    try:
        names = list(nx.lexicographical_topological_sort(
            graph, key=lambda n: graph.nodes[n]["index"]))
    except nx.NetworkXUnfeasible as exc:
        cycle = sorted({n for edge in nx.find_cycle(graph) for n in edge[:2]})
        raise PluginGraphError(error(
            "TJC-PLUGIN-GRAPH",
            f"plugin dependency cycle between {', '.join(cycle)}")) from exc
    return tuple(by_name[n] for n in names)
