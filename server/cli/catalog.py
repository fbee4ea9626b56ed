"""What ``sbpy check`` and ``sbpy runfile`` resolve names against, gathered without starting Spark.

- ``load_registries(config)``: the plugin registries a server with that config would have (built-in
  types and functions, installed ``sbpy.plugins`` entry points, the config's ``plugins`` modules);
- ``catalog_of(registries)``: their names as a ``Catalog`` (``sbpy.bql.analyzer.resolve``), and
  ``function_registry(registries)`` the function specs the analyzer checks arities with;
- ``topology_nodes(client, topology)``: the sources, streams and sinks of a running topology (REST
  ``GET /topologies/<t>/sources|streams|sinks``). The REST API does not list states, so they are
  unknown (``Existing.states`` None).

    >>> from sbpy.plugins import PluginRegistries
    >>> catalog = catalog_of(PluginRegistries())
    >>> "file" in catalog.source_types and "abs" in catalog.functions and "duplicate" in catalog.udsfs
    True
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sbpy.bql.analyzer.resolve import Catalog, Existing

if TYPE_CHECKING:
    from sbpy.plugins.registry import PluginRegistries

    from ..config import Config
    from .client import ApiClient

CHECK_TOPOLOGY = "sbpy_check"  # the name context-taking plugins see while their specs are built


def load_registries(config: Config | None) -> PluginRegistries:
    """The default registries with the installed plugins and ``config.plugins`` loaded (as
    ``sbpy run`` does); ``PluginLoadError`` names a plugin that fails to import."""
    from sbpy.plugins.loader import load_all

    return load_all(config.plugins, folders=config.plugin_folders) if config is not None else load_all()


def function_registry(registries: PluginRegistries) -> Any:
    """Built-in functions plus the plugin UDFs/UDAFs as ``FunctionSpec``s (arity, aggregate flags)."""
    return registries.for_topology(CHECK_TOPOLOGY).functions


def catalog_of(registries: PluginRegistries, functions: Any = None) -> Catalog:
    """The registered names of every kind; ``functions`` is ``function_registry(registries)`` if given."""
    functions = functions if functions is not None else function_registry(registries)
    state_types = registries.uds_types
    return Catalog(
        functions=frozenset(functions.names()),
        udsfs=frozenset(registries.udsfs.names()),
        source_types=frozenset(registries.source_types.names()),
        sink_types=frozenset(registries.sink_types.names()),
        state_types=frozenset(state_types.names()),
        loadable_state_types=frozenset(
            n for n in state_types.names() if callable(getattr(state_types.lookup(n), "load_state", None))),
        state_functions=frozenset(n for n in registries.udfs.names() if registries.udfs.lookup(n).needs_states),
    )


def topology_nodes(client: ApiClient, topology: str) -> Existing:
    """The nodes of ``topology`` on the server ``client`` talks to; ``RequestFailed`` if it cannot
    answer (unreachable, no such topology: ``E0001``)."""
    names: dict[str, frozenset[str]] = {}
    for kind in ("source", "stream", "sink"):
        body = client.request("GET", f"/topologies/{topology}/{kind}s")
        names[kind] = frozenset(str(node["name"]).lower() for node in body[f"{kind}s"])
    return Existing(sources=names["source"], streams=names["stream"], sinks=names["sink"], states=None)
