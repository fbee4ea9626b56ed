"""``/topologies/{t}/sources|streams|sinks[/{name}]``: the nodes of a topology.

A list answers ``{"topology", "count", "<kind>s": [{"node_type", "name", "state"}]}``; one node
``{"topology", "<kind>": {"node_type", "name", "state", "status", ["meta"]}}``. Streams have the
node type ``"box"`` (SensorBee's).
"""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from sbpy.bql.errors import BQLError

from .errors import not_found
from .schemas import ERROR_RESPONSES, json_response
from .topologies import TopologyDep

NODE_TYPES = {"source": "source", "stream": "box", "sink": "sink"}

router = APIRouter(prefix="/topologies/{topology_name}", tags=["nodes"], responses=ERROR_RESPONSES)


def _list(topology: Any, kind: str) -> Any:
    nodes = []
    for node in topology.list_nodes(kind):
        nodes.append({**node, "node_type": NODE_TYPES[kind]})
    return json_response({"topology": topology.name, "count": len(nodes), f"{kind}s": nodes})


def _show(topology: Any, kind: str, name: str) -> Any:
    try:
        node = topology.node(kind, name)
    except (BQLError, LookupError):
        raise not_found(f"The {kind} was not found") from None
    node = {**node, "node_type": NODE_TYPES[kind]}
    if node.get("meta") is None:
        node.pop("meta", None)
    return json_response({"topology": topology.name, kind: node})


def _add_routes(kind: str, plural_doc: str) -> None:
    """``GET /<kind>s`` and ``GET /<kind>s/{name}`` for one node kind."""

    def list_nodes(topology: TopologyDep) -> Any:
        return _list(topology, kind)

    def show_node(topology: TopologyDep, name: str) -> Any:
        return _show(topology, kind, name)

    router.add_api_route(f"/{kind}s", list_nodes, methods=["GET"], name=f"list_{kind}s",
                         description=f"The {plural_doc} of the topology.")
    router.add_api_route(f"/{kind}s/{{name}}", show_node, methods=["GET"], name=f"show_{kind}",
                         description=f'One {kind} with its status; 404 E0001 "The {kind} was not found".')


for _kind, _plural_doc in (("source", "sources"), ("stream", "streams (boxes)"), ("sink", "sinks")):
    _add_routes(_kind, _plural_doc)
