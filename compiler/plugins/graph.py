"""Order the active plugins from what they require and provide (networkx).

An edge runs from every provider of a fact to every plugin that requires it (or orders itself
`after` it). Ties break by registry position, so the order is deterministic. A cycle or a
required fact no active plugin provides is a `PluginGraphError` naming every plugin involved.
Pure; called by `compiler.compile` and `tjc explain`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx

from compiler.diagnostics import error
from compiler.errors import PluginGraphError
from compiler.plugins.base import PluginSpec


def build_graph(plugins: Sequence[PluginSpec]) -> nx.DiGraph:
    """The dependency graph of the given plugins, nodes in registry order. (networkx is
    imported here, not at module load: it costs a tenth of a second of start-up, and the
    order it computes is memoised.)"""
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
    """Topological order with ties broken by registry position (memoised: plugins are
    immutable declarations, so the same set always gives the same order)."""
    return list(_order(tuple(plugins)))


@lru_cache(maxsize=64)
def _order(plugins: tuple[PluginSpec, ...]) -> tuple[PluginSpec, ...]:
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
